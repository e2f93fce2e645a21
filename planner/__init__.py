"""campaign-planner core: what fits in a GPU rental window, as a runnable plan.

This package never imports the terminal UI, and imports torch only inside the functions
that measure, so a headless plan loads neither.
"""

__version__ = "0.1.0"
