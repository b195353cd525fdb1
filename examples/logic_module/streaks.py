"""A logic in its own module: executors import it by name, so it must reach
them, with ``--py-files examples/logic_module/streaks.py`` (a package: zip it
and pass the zip). Only classes defined in the script's ``__main__`` travel by
value."""

import sparkwax as sw


class Streak(sw.StatefulLogic):
    """Emits ``(length, best)`` per reading: the current run of rising values
    and the longest run so far."""

    def __init__(self, resume=None):
        self.previous, self.length, self.best = resume or (None, 0, 0)

    def on_item(self, value):
        rising = self.previous is not None and value > self.previous
        self.length = self.length + 1 if rising else 1
        self.best = max(self.best, self.length)
        self.previous = value
        return [(self.length, self.best)], sw.RETAIN

    def snapshot(self):
        return (self.previous, self.length, self.best)
