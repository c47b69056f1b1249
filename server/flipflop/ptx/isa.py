"""Facts from the PTX ISA 9.0 manual that decide what is known and what ends a basic block."""

from __future__ import annotations

# Every instruction name of PTX ISA 9.0 (§9.7), up to the first dot. An opcode whose first part
# is not here belongs to a newer ISA: it is reported as an unknown statement, not an error.
KNOWN_OPCODES: frozenset[str] = frozenset(
    """
    abs activemask add addc alloca and applypriority atom bar barrier bfe bfi bfind bmsk bra
    brev brkpt brx call clusterlaunchcontrol clz cnot copysign cos cp createpolicy cvt cvta
    discard div dp2a dp4a elect ex2 exit fence fma fns getctarank griddepcontrol isspacep
    istypep ld ldmatrix ldu lg2 lop3 mad mad24 madc mapa match max mbarrier membar min mma
    mov movmatrix mul mul24 multimem nanosleep neg not or pmevent popc prefetch prefetchu
    prmt rcp red redux rem ret rsqrt sad selp set setmaxnreg setp shf shfl shl shr sin slct
    sqrt st stackrestore stacksave stmatrix sub subc suld suq sured sust szext tanh tcgen05
    tensormap testp tex tld4 trap txq vabsdiff vabsdiff2 vabsdiff4 vadd vadd2 vadd4 vavrg2
    vavrg4 vmad vmax vmax2 vmax4 vmin vmin2 vmin4 vote vset vset2 vset4 vshl vshr vsub vsub2
    vsub4 wgmma wmma xor
    """.split()  # noqa: SIM905
)

# Control leaves the straight-line path after these (§9.7.13); the next instruction starts a
# new basic block. `call` returns to the next instruction, so it does not end a block.
BLOCK_ENDING_OPCODES: frozenset[str] = frozenset({"bra", "brx", "ret", "exit"})

# Directives that may begin a line of valid PTX outside a `.section` body (§11). A line that
# starts with any other `.word` is a directive of a newer ISA and is reported as unknown.
KNOWN_DIRECTIVES: frozenset[str] = frozenset(
    """
    .version .target .address_size .file .loc .section .pragma .visible .extern .weak
    .common .global .const .shared .local .param .reg .tex .entry .func .maxntid .reqntid
    .minnctapersm .maxnctapersm .maxnreg .reqnctapercluster .explicitcluster .maxclusterrank
    .blocksareclusters .noreturn .align .attribute .ptr .callprototype .branchtargets
    .calltargets
    """.split()  # noqa: SIM905
)

# Directives that end at the end of their line rather than at a ';' (§11.1, §11.5).
NEWLINE_TERMINATED_DIRECTIVES: tuple[str, ...] = (
    ".version",
    ".target",
    ".address_size",
    ".file",
    ".loc",
)
