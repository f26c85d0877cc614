"""The cluster twin: a fast discrete-event model of a GPU NodePool under Karpenter, and replays.

Pure Python and in memory; policies decide placeholder targets through the same planner core the
daemon uses. Used by ``forecaster replay`` to compare reactive, static, schedule, predictive and
oracle prewarming on a job trace.
"""
