"""Text the commands print: columns aligned to their widest cell."""

from __future__ import annotations


def aligned_rows(columns, cells: list[list[str]]) -> list[str]:
    """The header line, then one line per row of `cells`, each column as wide as its widest
    cell (header included), separated by two spaces, trailing blanks cut."""
    widths = [max(len(c), *(len(line[i]) for line in cells)) if cells else len(c)
              for i, c in enumerate(columns)]
    return ["  ".join(v.ljust(w) for v, w in zip(line, widths, strict=True)).rstrip()
            for line in [list(columns), *cells]]


def byte_size(n: int | None) -> str:
    """Bytes in decimal units, as publishers list them: 950 B, 1.2 kB, 47.3 MB, 8.1 GB; None:
    `? B` (a size the server did not give)."""
    if n is None:
        return "? B"
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"
