"""Figures and their provenance: entered, measured, scaled or analytic step times, peak
memory and throughput, and the cross-card model that moves them between cards."""
