"""Two XGBoost workers from the plugin's DMLC_* env: task 0 also runs the tracker on
DMLC_TRACKER_PORT; both join it, train on their own half of the data and must end with the
same model, better than the first round."""

import os

import numpy as np
import xgboost as xgb
from xgboost import collective
from xgboost.tracker import RabitTracker

task = int(os.environ["DMLC_TASK_ID"])
workers = int(os.environ["DMLC_NUM_WORKER"])
tracker = None
if task == 0:
    tracker = RabitTracker(n_workers=workers, host_ip="0.0.0.0",
                           port=int(os.environ["DMLC_TRACKER_PORT"]), sortby="task")
    tracker.start()
args = {"dmlc_tracker_uri": os.environ["DMLC_TRACKER_URI"],
        "dmlc_tracker_port": int(os.environ["DMLC_TRACKER_PORT"]),
        "dmlc_task_id": str(task)}
with collective.CommunicatorContext(**args):
    assert collective.get_world_size() == workers == 2, collective.get_world_size()
    rng = np.random.default_rng(collective.get_rank())
    features = rng.normal(size=(500, 4))
    labels = (features[:, 0] + features[:, 1] > 0).astype(int)
    data = xgb.DMatrix(features, label=labels)
    history: dict[str, dict[str, list[float]]] = {}
    booster = xgb.train({"objective": "binary:logistic", "tree_method": "hist", "nthread": 1,
                         "eval_metric": "logloss"}, data, num_boost_round=10,
                        evals=[(data, "train")], evals_result=history, verbose_eval=False)
    losses = history["train"]["logloss"]
    dump = booster.get_dump()[0].encode()
    digests = collective.allreduce(np.array([len(dump), sum(dump)], dtype=np.int64),
                                   collective.Op.SUM)
    collective.communicator_print(f"rank {collective.get_rank()}: logloss {losses[0]:.4f} -> "
                                  f"{losses[-1]:.4f}\n")
    assert losses[-1] < losses[0], losses
    assert digests[0] == 2 * len(dump) and digests[1] == 2 * sum(dump), digests
if tracker is not None:
    tracker.wait_for(timeout=30)
