"Worked solutions to the exercises of chapter 09c (the `minipaged bench` command)."
import csv
from collections import Counter
from pathlib import Path


def my_flag_name(name: str, default=None) -> str:
    "`--block-size` for 'block_size'; `--no-prefix-caching` for 'enable_prefix_caching' when it is on"
    # A switch that is on by default needs an option that turns it off; one that is off is turned on by its name.
    if default is True: name = 'no_' + name.removeprefix('enable_')
    return '--' + name.replace('_', '-')


def completed_by_repetition(folder: Path) -> list[int]:
    "[completed requests of repetition 0, of repetition 1, ...] read from `folder`/requests.csv"
    rows = list(csv.DictReader((Path(folder) / 'requests.csv').open()))
    # A CSV holds text: the repetition is '0', '1', ...; a repetition in which nothing completed still counts.
    reps = sorted({int(r['repetition']) for r in rows})
    done = Counter(int(r['repetition']) for r in rows if r['status'] == 'completed')
    return [done[k] for k in reps]
