"""Golden vectors for hardware teams: ``tcast golden`` and ``tcast verify``.

A *set* is a directory: ``header.json`` (every setting, every rule by name, the column layout,
the flag bits and the SHA-256 of every other file), ``vectors.txt`` (one case per line,
fixed-width hex, TestFloat style), ``vectors.memh`` (the same lines as ``$readmemh`` words),
``vectors.npz`` (the same columns as arrays) and, for compress casts, ``packed.bin`` (and
``packed_mask.bin``). Sets are byte-reproducible: inputs come from the documented Philox
stream only and every file is written deterministically. See ``docs/golden-vectors.md``.
"""

from ._cases import LEVELS
from ._core import CORE, METADATA_SETS, TRANSFORM_SETS, core_settings
from ._files import header_digest
from ._flags import FLAGS
from ._generate import SCHEMA_VERSION, GoldenSet, Settings, generate, write
from ._verify import (
    EngineRefusesError,
    EngineUnavailableError,
    GoldenSetError,
    LoadedSet,
    Mismatch,
    compare,
    describe_word,
    engine_columns,
    load,
    read_actual,
    report,
)

__all__ = [
    "CORE",
    "FLAGS",
    "LEVELS",
    "METADATA_SETS",
    "SCHEMA_VERSION",
    "TRANSFORM_SETS",
    "EngineRefusesError",
    "EngineUnavailableError",
    "GoldenSet",
    "GoldenSetError",
    "LoadedSet",
    "Mismatch",
    "Settings",
    "compare",
    "core_settings",
    "describe_word",
    "engine_columns",
    "generate",
    "header_digest",
    "load",
    "read_actual",
    "report",
    "write",
]
