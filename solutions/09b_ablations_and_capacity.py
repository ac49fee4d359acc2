"Worked solutions to the exercises of chapter 09b (memory, ablations and capacity)."


def against_baseline(table: list[dict], metric: str) -> dict:
    "{config: row[metric] / baseline[metric]} for every row after the first (the baseline)"
    base = table[0][metric]
    # A ratio to nothing, or of nothing, is no number: None rather than 0 or inf, so a table shows '-'.
    return {r['config']: None if not base or r[metric] is None else r[metric] / base for r in table[1:]}


def highest_supported(rows: list[dict]) -> dict:
    "{config: the highest rate below its first miss (None if it misses at the lowest)}"
    best, missed = {}, set()
    # Rates in increasing order: a configuration that missed once supports nothing above that rate, even
    # if a later run happens to meet the objectives (noise, not capacity).
    for r in sorted(rows, key=lambda r: r['rate']):
        best.setdefault(r['config'], None)
        if not r['meets']: missed.add(r['config'])
        elif r['config'] not in missed: best[r['config']] = r['rate']
    order = list(dict.fromkeys(r['config'] for r in rows))
    return {c: best[c] for c in order}
