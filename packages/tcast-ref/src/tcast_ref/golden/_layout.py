"""The columns of a golden-vector line and their text forms (``vectors.txt``, ``vectors.memh``).

A line is a sequence of *fields*; a field has a name, a count of words and a width in bits.
Every word is written as fixed-width uppercase hex (``ceil(bits / 4)`` digits). In
``vectors.txt`` words are separated by one space (TestFloat style); in ``vectors.memh`` the
words of a line are joined by ``_`` into one wide word that ``$readmemh`` reads, the first word
of the line in the most significant digits.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tcast import SpecError

__all__ = ["Field", "Layout"]


@dataclass(frozen=True)
class Field:
    """One column group of a line.

    Attributes:
        name: ``IN``, ``RBITS``, ``SCALE``, ``ZERO``, ``TENSCALE``, ``OUT``, ``MASK``, ``FLAGS``,
            ``CODE`` (decode sets) or ``VALUE`` (decode sets).
        count: words per line.
        bits: meaningful bits per word.
        role: ``input`` (given to the device) or ``output`` (produced by the device).
        format: what a word holds (a number format code, ``uint32``, ``flags8``, ``mask``).
    """

    name: str
    count: int
    bits: int
    role: str
    format: str

    @property
    def digits(self) -> int:
        """Hex digits per word."""
        return (self.bits + 3) // 4

    def label(self) -> str:
        """Column label for the comment line, e.g. ``IN[0..31]:float32``."""
        idx = "" if self.count == 1 else f"[0..{self.count - 1}]"
        return f"{self.name}{idx}:{self.format}"

    def describe(self) -> dict:
        """The field as it appears in ``header.json``."""
        return {
            "name": self.name,
            "count": self.count,
            "bits": self.bits,
            "hex_digits": self.digits,
            "role": self.role,
            "format": self.format,
        }


@dataclass(frozen=True)
class Layout:
    """The ordered fields of every line of a set."""

    fields: tuple[Field, ...]

    @property
    def words(self) -> int:
        """Words per line."""
        return sum(f.count for f in self.fields)

    @property
    def memh_bits(self) -> int:
        """Width in bits of one ``vectors.memh`` word (all digits of a line)."""
        return 4 * sum(f.digits * f.count for f in self.fields)

    def field(self, name: str) -> Field | None:
        """The field called ``name`` (None when the set has none)."""
        return next((f for f in self.fields if f.name == name), None)

    def offsets(self) -> dict[str, int]:
        """Index of each field's first word in a line."""
        out, i = {}, 0
        for f in self.fields:
            out[f.name] = i
            i += f.count
        return out

    def memh_ranges(self) -> list[dict]:
        """Bit range of every field inside a ``vectors.memh`` word (MSB first)."""
        hi = self.memh_bits - 1
        out = []
        for f in self.fields:
            width = 4 * f.digits
            out.append(
                {
                    "name": f.name,
                    "msb": hi,
                    "lsb": hi - width * f.count + 1,
                    "word_bits": width,
                    "count": f.count,
                }
            )
            hi -= width * f.count
        return out

    def comment(self) -> str:
        """The one-line column legend."""
        return " ".join(f.label() for f in self.fields)

    # ------------------------------------------------------------------ formatting
    def format_lines(self, columns: dict[str, np.ndarray], sep: str) -> list[str]:
        """Format rows: ``columns[name]`` is an (N, count) integer array per field."""
        parts = []
        for f in self.fields:
            a = np.asarray(columns[f.name]).astype(np.uint64).reshape(-1, f.count)
            parts.append(_hex_matrix(a, f.digits))
        n = parts[0].shape[0] if parts else 0
        words = np.concatenate(parts, axis=1) if parts else np.empty((0, 0), object)
        return [sep.join(words[i]) for i in range(n)]

    def format_bytes(self, columns: dict[str, np.ndarray], sep: str) -> bytes:
        """The lines of :meth:`format_lines`, each ending in a newline, as ASCII bytes.

        Built as one byte matrix (a row per line) rather than string by string: the same
        bytes, about a hundred times faster.
        """
        parts = []
        n = 0
        for f in self.fields:
            a = np.asarray(columns[f.name]).astype(np.uint64).reshape(-1, f.count)
            n = a.shape[0]
            shifts = np.uint64(4) * np.arange(f.digits - 1, -1, -1, dtype=np.uint64)
            nibbles = (a[:, :, None] >> shifts) & np.uint64(0xF)
            words = np.empty((n, f.count, f.digits + 1), np.uint8)
            words[..., :-1] = _HEX[nibbles.astype(np.intp)]
            words[..., -1] = ord(sep)  # after every word; the line's last becomes the newline
            parts.append(words.reshape(n, -1))
        if not parts or n == 0:
            return b""
        lines = np.concatenate(parts, axis=1)
        lines[:, -1] = ord("\n")
        return lines.tobytes()

    @property
    def digits(self) -> int:
        """Hex digits of a whole line."""
        return sum(f.digits * f.count for f in self.fields)

    def parse_line(self, text: str, memh: bool) -> list[int]:
        """Parse one line into its words.

        A txt line has its words separated by whitespace. A memh line is one hex number: its
        underscores are ignored (as ``$readmemh`` does), so both this tool's ``_``-joined
        words and a plain ``$writememh`` dump of the line's bits are read, cut at the field
        widths.

        Raises:
            SpecError: for a wrong number of words or digits, a word of the wrong width or a
                bad digit.
        """
        if memh:
            digits = text.replace("_", "").strip()
            if len(digits) != self.digits:
                raise SpecError(f"expected {self.digits} hex digits, found {len(digits)}")
            raw, i = [], 0
            for f in self.fields:
                for _ in range(f.count):
                    raw.append(digits[i : i + f.digits])
                    i += f.digits
        else:
            raw = text.split()
        if len(raw) != self.words:
            raise SpecError(f"expected {self.words} words, found {len(raw)}")
        out, i = [], 0
        for f in self.fields:
            for _ in range(f.count):
                w = raw[i]
                if len(w) != f.digits:
                    raise SpecError(
                        f"word {i + 1} ({f.name}) must have {f.digits} hex digits, got {w!r}"
                    )
                try:
                    v = int(w, 16)
                except ValueError:
                    raise SpecError(f"word {i + 1} ({f.name}) is not hex: {w!r}") from None
                if v >> f.bits:
                    raise SpecError(f"word {i + 1} ({f.name}) exceeds {f.bits} bits: {w!r}")
                out.append(v)
                i += 1
        return out


_HEX = np.frombuffer(b"0123456789ABCDEF", np.uint8)


def _hex_matrix(a: np.ndarray, digits: int) -> np.ndarray:
    """Uppercase fixed-width hex strings of an (N, K) array of unsigned integers."""
    flat = a.reshape(-1)
    table = np.array([f"{i:X}" for i in range(16)])
    nib = [(flat >> np.uint64(4 * (digits - 1 - d))) & np.uint64(0xF) for d in range(digits)]
    strs = table[nib[0].astype(np.intp)].astype(object)
    for d in range(1, digits):
        strs = strs + table[nib[d].astype(np.intp)]
    return strs.reshape(a.shape)
