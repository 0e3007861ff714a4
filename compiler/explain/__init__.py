"""The explain application (`tjc explain`): why each field of a TrainJob's output looks the way it
does (`explainer`).
"""
