"""Numba kernels over grouped arrays (no booster imports here): metrics with tie policies,
the CCS/SFA/REINFORCE gradient estimators and the counter-based noise streams."""
