"Worked solutions to the exercises of chapter 05b (the reservation baseline)."


def idle_slots(manager, seq_ids) -> int:
    "The slots the tables of `seq_ids` hold that none of their tokens uses"
    # A table of k blocks holds k * B slots whichever allocator made it: a reservation's table is its whole
    # region, a paged table only the blocks its tokens reached. The tokens use the first num_tokens of them.
    B = manager.block_size
    return sum(len(manager.block_table(s)) * B - manager.num_tokens(s) for s in seq_ids)


def admit_all(manager, prompts) -> list[int]:
    "Admit, in order, every prompt that fits now (id = its index); return the indices admitted"
    # Ask before acting: `can_allocate` answers "would allocate succeed now?" for both allocators, and says no
    # (rather than raising) for a prompt that can never fit. allocate is atomic anyway, but asking first means
    # a refusal touches nothing, not even the error path.
    admitted = []
    for i, prompt in enumerate(prompts):
        if manager.can_allocate(prompt):
            manager.allocate(i, prompt)
            admitted.append(i)
    return admitted
