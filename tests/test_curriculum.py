"""The embedded curriculum: enough distinct problems, held-out split disjoint by question text."""

import pytest

from rsim_env.sources.curriculum import DEFAULT_MIX, TASKS, curriculum_problems, split_of


def test_default_mix_has_1000_distinct_train_problems_and_a_disjoint_heldout_split():
    train = curriculum_problems(1000, "train")
    held = curriculum_problems(400, "heldout", seed=1000)
    assert len(train) == 1000 and len({p.question for p in train}) == 1000
    assert len(held) == 400 and len({p.question for p in held}) == 400
    assert not {p.question for p in train} & {p.question for p in held}
    assert {p.source for p in train} == {f"curriculum:{t}" for t in DEFAULT_MIX}
    assert all(split_of(p.question) == "heldout" for p in held)


def test_same_seed_same_problems_and_answers_are_numbers():
    a, b = curriculum_problems(20, "train", seed=3), curriculum_problems(20, "train", seed=3)
    assert a == b
    assert all(p.answer.lstrip("-").isdigit() for p in a)


@pytest.mark.parametrize("task", sorted(TASKS))
def test_every_task_generates(task):
    ps = curriculum_problems(5, "all", tasks=(task,))
    assert len(ps) == 5 and all(p.source == f"curriculum:{task}" for p in ps)


@pytest.mark.parametrize("kwargs,msg", [({"split": "test"}, "split"), ({"tasks": ("nope",)}, "unknown curriculum task"),
                                        ({"size": 0}, "size"), ({"tasks": ()}, "at least one")])
def test_bad_arguments(kwargs, msg):
    with pytest.raises(ValueError, match=msg):
        curriculum_problems(**{"size": 5, **kwargs})
