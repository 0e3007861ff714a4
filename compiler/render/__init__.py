"""The render application (`tjc render`): input sources in, one result per TrainJob out
(`pipeline`).
"""
