"Worked solutions to chapter 15's exercises"
import math
from minipaged.fast.graphs import padded_size


def padding_share(sizes: list[int], batches: list[int]) -> float:
    "Each batch runs as its padded size; the padding is the difference"
    run = [padded_size(n, sizes) for n in batches]
    return (sum(run) - sum(batches)) / sum(run)


def tight_ladder(max_num_seqs: int, max_waste: float) -> list[int]:
    "From the top down: a size serves every n >= size / (1 + max_waste); the next size is the first n it cannot"
    sizes = [max_num_seqs]
    while sizes[-1] > 1 and (lowest := math.ceil(sizes[-1] / (1 + max_waste))) > 1:
        sizes.append(lowest - 1)
    if sizes[-1] != 1: sizes.append(1)
    return sorted(set(sizes))
