"""Choosing a rental: the same preset compared across cards (`compare`) and the cheapest
card × count × window that meets a goal (`search`)."""
