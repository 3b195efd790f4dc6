"""One fold's data as every probe takes it: the train, validation and test parts, cut once.

Each part holds its rows' features (X) and labels (y, a class or an age), and where they sit
in the table the fold was cut from (`rows`, ascending within a part), so a task can name the
test rows' windows, subjects or units after the fit. The split also keeps that table, the
fold rule's line and, where a task needs them, its rows' unit ids, for the fold's record. The
fold job asks the task for it (Task.split) and hands it to the task's fit; a probe reads only
its parts.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

PARTS = ("train", "val", "test")


@dataclass(frozen=True, eq=False)
class Part:
    X: np.ndarray  # rows x features
    y: np.ndarray  # per row: the class index, or the value (brain age: years)
    rows: np.ndarray  # int64: each row's position in the split's table

    def __len__(self) -> int:
        return len(self.y)


@dataclass(frozen=True, eq=False)
class Split:
    train: Part
    val: Part
    test: Part
    table: pd.DataFrame | None = None  # what `rows` index: the window or unit table
    rule: str = ""  # the fold plan's rule, one line (probing/folds.FoldPlan.rule)
    ids: np.ndarray | None = None  # per table row, its unit's id where a task needs it

    @classmethod
    def cut(cls, X, y, masks: dict[str, np.ndarray], table: pd.DataFrame | None = None,
            rule: str = "", ids: np.ndarray | None = None) -> Split:
        """The parts of X and y the boolean row masks (probing/folds.fold_split) select."""
        X = np.asarray(X)
        return cls.read({p: X[masks[p]] for p in PARTS}, y, masks, table, rule, ids)

    @classmethod
    def read(cls, X_parts: dict[str, np.ndarray], y, masks: dict[str, np.ndarray],
             table: pd.DataFrame | None = None, rule: str = "",
             ids: np.ndarray | None = None) -> Split:
        """As `cut`, each part's X already read (pipeline/store.EmbeddingStore.read_parts:
        the fold's rows without the whole table's X in memory)."""
        y = np.asarray(y)
        return cls(*(Part(X_parts[p], y[masks[p]], np.flatnonzero(masks[p])) for p in PARTS),
                   table=table, rule=rule, ids=ids)

    @classmethod
    def of(cls, train: tuple, val: tuple | None, test: tuple) -> Split:
        """From (X, y) pairs, their rows numbered in that order (train, then val, then test);
        val None: an empty part (a probe that validates within its training part)."""
        train_X = np.asarray(train[0])
        if val is None:
            val = (train_X[:0], np.asarray(train[1])[:0])
        parts, start = [], 0
        for X, y in (train, val, test):
            X, y = np.asarray(X), np.asarray(y)
            parts.append(Part(X, y, np.arange(start, start + len(y))))
            start += len(y)
        return cls(*parts)

    def part(self, name: str) -> Part:
        return getattr(self, name)

    def pooled(self) -> Part:
        """The training and validation rows as one part, in the rows' order (where a probe
        fits on both: a fixed C, or alpha chosen by an inner CV)."""
        if not len(self.val):
            return self.train
        rows = np.concatenate([self.train.rows, self.val.rows])
        order = np.argsort(rows, kind="stable")
        return Part(np.concatenate([self.train.X, self.val.X])[order],
                    np.concatenate([self.train.y, self.val.y])[order], rows[order])

    def test_table(self) -> pd.DataFrame:
        """The table's test rows, in the test part's order."""
        return self.table.iloc[self.test.rows]
