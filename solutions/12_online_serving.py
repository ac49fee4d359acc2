"Worked solutions to the exercises of chapter 12 (the protocol)"
from minipaged.serve.protocol import ERROR_TYPES


def my_error_body(status: int, message: str, param: str | None = None) -> dict:
    "The OpenAI-style error body of a refusal"
    # The type is what OpenAI's clients turn into an exception class; a status they do not name is a server error.
    return dict(error=dict(message=message, type=ERROR_TYPES.get(status, 'InternalServerError'), param=param,
                           code=status))


def bucket_quantile(bounds: list[float], cumulative: list[int], q: float) -> float:
    "Prometheus' histogram_quantile: linear interpolation inside the bucket where the rank q * count falls"
    rank = q * cumulative[-1]
    for i, (b, c) in enumerate(zip(bounds, cumulative)):
        if c >= rank:
            if b == float('inf'): return bounds[i - 1]
            lo, below = (bounds[i - 1], cumulative[i - 1]) if i else (0.0, 0)
            return lo + (b - lo) * (rank - below) / (c - below) if c > below else b
    return bounds[-2]
