package main

// What the Pod Security Standards' own implementation (k8s.io/pod-security-admission
// v0.36.2, the code kube-apiserver's PodSecurity admission runs) says of pods: each pod, as
// the API server stores it (v1 defaulting, k8s.io/kubernetes), goes through
// policy.NewEvaluator(policy.DefaultChecks()).EvaluatePod at each level asked, version
// "latest"; the answer names the check behind each result. EvaluatePod returns its results
// in its own order without the check ids: the ids come from the checks' declarations (baseline
// ids sorted, then restricted ones, without the baseline checks a restricted one overrides),
// and every result is compared with that check's own function run on the same pod, so a
// wrong attribution fails loudly instead of passing quietly.

import (
	"encoding/json"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	"k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"
)

// pssVerdict is one pod's result at one level: every check evaluated, and the failed ones
// with upstream's reason and detail.
type pssVerdict struct {
	Checked []string          `json:"checked"`
	Denied  map[string]string `json:"denied"`
}

type pssPodAnswer struct {
	Levels map[string]pssVerdict `json:"levels,omitempty"`
	Error  string                `json:"error,omitempty"`
}

type pssAnswer struct {
	Pods []pssPodAnswer `json:"pods"`
}

// pssLayout is what EvaluatePod runs at one level, in its order: check ids and functions.
type pssLayout struct {
	ids []string
	fns []policy.CheckPodFn
}

var (
	pssEvaluator policy.Evaluator
	pssLayouts   map[api.Level]pssLayout
)

func pssSetup() error {
	if pssEvaluator != nil {
		return nil
	}
	checks := policy.DefaultChecks()
	evaluator, err := newPodSecurityEvaluator(checks)
	if err != nil {
		return err
	}
	pssEvaluator = evaluator
	pssLayouts = map[api.Level]pssLayout{
		api.LevelBaseline:   layout(checks, false),
		api.LevelRestricted: layout(checks, true),
	}
	return nil
}

// layout lists the checks of the baseline level, or of the restricted level (the baseline
// ones a restricted check overrides left out), each with its latest version's function.
func layout(checks []policy.Check, restricted bool) pssLayout {
	overridden := map[policy.CheckID]bool{}
	latest := map[string]policy.VersionedCheck{}
	var baseline, strict []string
	for _, c := range checks {
		last := c.Versions[len(c.Versions)-1]
		latest[string(c.ID)] = last
		if c.Level == api.LevelRestricted {
			strict = append(strict, string(c.ID))
			for _, id := range last.OverrideCheckIDs {
				overridden[id] = true
			}
		} else {
			baseline = append(baseline, string(c.ID))
		}
	}
	slices.Sort(baseline)
	slices.Sort(strict)
	var out pssLayout
	for _, id := range baseline {
		if !restricted || !overridden[policy.CheckID(id)] {
			out.ids = append(out.ids, id)
		}
	}
	if restricted {
		out.ids = append(out.ids, strict...)
	}
	for _, id := range out.ids {
		out.fns = append(out.fns, latest[id].CheckPod)
	}
	return out
}

// podSecurity answers the op "pss": `pods` are {"metadata", "spec"} objects, `levels` the
// levels to evaluate (baseline, restricted); `raw` skips the API server's defaulting.
func podSecurity(pods []json.RawMessage, levels []string, raw bool) any {
	if err := pssSetup(); err != nil {
		return map[string]string{"fatal": err.Error()}
	}
	out := pssAnswer{Pods: []pssPodAnswer{}}
	for _, data := range pods {
		out.Pods = append(out.Pods, pssOne(data, levels, raw))
	}
	return out
}

func pssOne(data json.RawMessage, levels []string, raw bool) (answer pssPodAnswer) {
	defer func() {
		if r := recover(); r != nil {
			answer = pssPodAnswer{Error: fmt.Sprintf("panic: %v", r)}
		}
	}()
	var pod corev1.Pod
	if err := utiljson.Unmarshal(data, &pod); err != nil {
		return pssPodAnswer{Error: err.Error()}
	}
	pod.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}
	if !raw {
		legacyscheme.Scheme.Default(&pod)
	}
	answer.Levels = map[string]pssVerdict{}
	for _, name := range levels {
		level, err := api.ParseLevel(name)
		if err != nil || level == api.LevelPrivileged {
			return pssPodAnswer{Error: fmt.Sprintf("level %q: expected baseline or restricted", name)}
		}
		verdict, err := pssEvaluate(&pod, level)
		if err != nil {
			return pssPodAnswer{Error: err.Error()}
		}
		answer.Levels[name] = verdict
	}
	return answer
}

func pssEvaluate(pod *corev1.Pod, level api.Level) (pssVerdict, error) {
	lv := api.LevelVersion{Level: level, Version: api.LatestVersion()}
	results := pssEvaluator.EvaluatePod(lv, &pod.ObjectMeta, &pod.Spec)
	plan := pssLayouts[level]
	if len(results) != len(plan.ids) {
		return pssVerdict{}, fmt.Errorf("%s: %d results for %d checks", level, len(results), len(plan.ids))
	}
	verdict := pssVerdict{Checked: plan.ids, Denied: map[string]string{}}
	for i, result := range results {
		own := plan.fns[i](&pod.ObjectMeta, &pod.Spec)
		if own != result {
			return pssVerdict{}, fmt.Errorf("%s: result %d is not check %s's", level, i, plan.ids[i])
		}
		if !result.Allowed {
			verdict.Denied[plan.ids[i]] = result.ForbiddenReason + " (" + result.ForbiddenDetail + ")"
		}
	}
	return verdict, nil
}
