"""Widgets of the terminal UI: navigation, status, form rows, the timeline, memory bars."""
