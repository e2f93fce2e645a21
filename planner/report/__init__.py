"""The plan as a picture: a self-contained HTML report (plotly, the `report` extra) and a
static image of the schedule (matplotlib)."""
