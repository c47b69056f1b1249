"""PTX front end: a Lark LALR grammar (`ptx.lark`) and a fast line scanner, giving `flipflop.ir`.

from flipflop.ptx import parse_ptx, PtxSyntaxError
module = parse_ptx(text, "kernel.ptx")
"""

from flipflop.ptx.errors import PtxSyntaxError
from flipflop.ptx.parse import parse_ptx

__all__ = ["PtxSyntaxError", "parse_ptx"]
