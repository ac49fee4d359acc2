"Worked solutions to the exercises of appendix 91 (shared helpers)."

def double(x: int) -> int:
    "Twice `x`"
    return 2 * x
