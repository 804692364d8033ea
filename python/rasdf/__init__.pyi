"""Type stubs of rasdf, ASDF files for Python (see the module's docstring)."""

import os
from typing import Any, Dict, Iterator, List, Mapping, Optional, Tuple, Union

import numpy as np

__version__: str

PathLike = Union[str, "os.PathLike[str]"]
# None, "none", "zlib", "bzp2", "lz4", "zstd" or "blsc" (the last two: the reference
# library reads them with the asdf-compression plugin).
Codec = Optional[str]

class AsdfError(ValueError):
    """A damaged, malformed or refused ASDF file; where, when known (else None)."""

    file: Optional[str]
    block: Optional[int]
    offset: Optional[int]
    path: Optional[str]
    line: Optional[Tuple[int, int]]

class TaggedDict(dict):
    tag: Optional[str]
    def __init__(self, *args: Any, tag: Optional[str] = None, **kwargs: Any) -> None: ...

class TaggedList(list):
    tag: Optional[str]
    def __init__(self, *args: Any, tag: Optional[str] = None) -> None: ...

class TaggedString(str):
    tag: Optional[str]
    def __new__(cls, value: str = "", tag: Optional[str] = None) -> "TaggedString": ...

class NDArray:
    """A core/ndarray node, read on first use."""

    tag: Optional[str]
    __asdf_lazy_array__: bool
    @property
    def shape(self) -> Tuple[int, ...]: ...
    @property
    def dtype(self) -> np.dtype: ...
    @property
    def ndim(self) -> int: ...
    @property
    def size(self) -> int: ...
    @property
    def masked(self) -> bool: ...
    def __len__(self) -> int: ...
    def read(self) -> np.ndarray: ...
    def __getitem__(self, key: Any) -> Any: ...
    def __array__(self, dtype: Any = None, copy: Optional[bool] = None) -> np.ndarray: ...
    def __iter__(self) -> Iterator[Any]: ...
    def to_dask(self, chunks: Any = None) -> Any: ...

class AsdfFile:
    """An open ASDF file."""

    @property
    def tree(self) -> Any: ...
    def __getitem__(self, path: str) -> Any: ...
    def __contains__(self, path: str) -> bool: ...
    def arrays(self) -> Dict[str, NDArray]: ...
    def info(
        self,
        max_rows: Optional[int] = None,
        max_cols: Optional[int] = None,
        show_values: bool = True,
        stats: bool = False,
        show_blocks: bool = False,
    ) -> str: ...
    def validate(self) -> None: ...
    def verify_checksums(self) -> None: ...
    def check_unchanged(self) -> None: ...
    def blocks(self) -> List[Tuple[str, int, int, int]]: ...
    @property
    def path(self) -> Optional[str]: ...
    @property
    def version(self) -> str: ...
    @property
    def closed(self) -> bool: ...
    def close(self) -> None: ...
    def __enter__(self) -> "AsdfFile": ...
    def __exit__(self, *exc: Any) -> None: ...

def open(
    path: PathLike,
    *,
    verify_checksums: bool = False,
    validate: bool = False,
    max_tree_bytes: Optional[int] = None,
    max_nodes: Optional[int] = None,
    max_block_bytes: Optional[int] = None,
    max_array_elements: Optional[int] = None,
    max_inline_bytes: Optional[int] = None,
    timeout: Optional[float] = None,
) -> AsdfFile: ...
def write(
    path: PathLike,
    tree: Union[Mapping[Any, Any], AsdfFile],
    *,
    compression: Union[Codec, Mapping[str, Codec]] = None,
    compression_level: Optional[int] = None,
    include_index: bool = True,
    checksums: bool = True,
) -> None: ...

def to_dask(files: Any, path: str, *, chunks: Any = None, axis: int = 0) -> Any: ...
def validate(
    path: PathLike,
    *,
    schemas: Union[None, bool, PathLike, List[PathLike]] = None,
) -> None: ...
