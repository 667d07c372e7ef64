"""model/interpret/head_functions.py: scores of known head functions, on hand-made maps whose scores are worked
out by hand, and on the copy task, whose cross-attention learns the diagonal."""

import numpy as np
import pytest

from model.interpret.head_functions import HEAD_FUNCTIONS, KINDS, functions_of, head_functions
from model.io.snapshots import Inspection


def one_hot_rows(keys: list[int], n_keys: int) -> np.ndarray:
    """``[len(keys), n_keys]``: row i puts all its weight on key ``keys[i]``."""
    w = np.zeros((len(keys), n_keys))
    w[np.arange(len(keys)), keys] = 1.0
    return w


def uniform_causal(n: int) -> np.ndarray:
    w = np.tril(np.ones((n, n)))
    return w / w.sum(-1, keepdims=True)


def inspection(
    src: list[str],
    tgt: list[str],
    encoder: np.ndarray | None = None,
    decoder_self: np.ndarray | None = None,
    cross: np.ndarray | None = None,
    masks: dict[str, np.ndarray] | None = None,
) -> Inspection:
    """An Inspection of one layer of two heads: head 0 the map given, head 1 a uniform one (zeros for a kind not
    given)."""
    S, T = len(src), len(tgt)

    def heads(m: np.ndarray | None, shape: tuple[int, int], uniform: np.ndarray) -> np.ndarray:
        if m is None:
            return np.zeros((1, 2, *shape))
        return np.stack([m, uniform])[None]

    return Inspection(
        src_tokens=src,
        tgt_tokens=tgt,
        out_tokens=tgt[1:] + ["<eos>"],
        encoder=heads(encoder, (S, S), np.full((S, S), 1 / max(S, 1))),
        decoder_self=heads(decoder_self, (T, T), uniform_causal(T)),
        cross=heads(cross, (T, S), np.full((T, S), 1 / max(S, 1))),
        target_probs=np.zeros(T),
        teacher_forced=True,
        masks=masks or {},
    )


def test_the_functions_are_declared_once_with_their_kinds():
    assert [f.id for f in functions_of("cross")] == ["alignment", "first_token", "eos"]
    assert [f.id for f in functions_of("decoder_self")] == ["previous_token", "first_token", "induction"]
    scores = head_functions(inspection(["a", "b"], ["<bos>", "a"]))
    assert set(scores) == set(KINDS)
    for kind in KINDS:
        assert set(scores[kind]) == {f.id for f in HEAD_FUNCTIONS if kind in f.kinds}
        assert all(s.shape == (1, 2) for s in scores[kind].values())


def test_a_pure_previous_token_head_scores_one_and_nothing_on_the_first_token():
    n = 6
    prev = one_hot_rows([0] + list(range(n - 1)), n)  # row 0 can only look at itself
    tokens = ["<bos>", "the", "cat", "sat", "on", "mats"]
    s = head_functions(inspection([], tokens, decoder_self=prev))["decoder_self"]
    assert s["previous_token"][0, 0] == pytest.approx(1.0)
    # only row 0 (forced onto key 0) and row 1 (whose previous token is key 0) weigh on the first token: 2 of 6
    assert s["first_token"][0, 0] == pytest.approx(2 / n)
    # the uniform causal head: row i puts 1/(i + 1) on each key, on i − 1 as on 0
    assert s["previous_token"][0, 1] == pytest.approx(np.mean([1 / (i + 1) for i in range(1, n)]))
    assert s["first_token"][0, 1] == pytest.approx(np.mean([1 / (i + 1) for i in range(n)]))


def test_a_diagonal_cross_map_aligns_perfectly_and_a_uniform_one_as_worked_by_hand():
    src, tgt = ["a", "b", "c", "d", "e", "<eos>"], ["<bos>", "a", "b", "c", "d", "e"]
    s = head_functions(inspection(src, tgt, cross=np.eye(6)))["cross"]
    assert s["alignment"][0, 0] == pytest.approx(1.0)
    assert s["eos"][0, 0] == pytest.approx(1 / 6)  # only the last row looks at <eos>
    # uniform over 6 keys: the window of ±1 holds 2 keys at either end and 3 in between
    assert s["alignment"][0, 1] == pytest.approx((2 + 3 * 4 + 2) / 6 / 6)
    assert s["eos"][0, 1] == pytest.approx(1 / 6)
    # a longer target than source: row i's diagonal key is ⌊i·S/T + ½⌋ (T = 4, S = 2: keys 0, 1, 1, 1)
    wide = inspection(["x", "y"], ["<bos>", "x", "x", "y"], cross=one_hot_rows([0, 1, 1, 1], 2))
    assert head_functions(wide)["cross"]["alignment"][0, 0] == pytest.approx(1.0)
    # a map off the diagonal by 2 is not aligned
    off = inspection(src, tgt, cross=one_hot_rows([2, 3, 4, 5, 0, 1], 6))
    assert head_functions(off)["cross"]["alignment"][0, 0] == pytest.approx(0.0)


def test_an_induction_head_scores_one_and_nan_without_a_repeat():
    tokens = ["<bos>", "A", "B", "C", "A", "B", "C"]
    # the induction head: at the second A (4) look at B (2), at the second B (5) at C (3), at C (6) at A (4);
    # the rows without an earlier occurrence look at themselves
    w = one_hot_rows([0, 1, 2, 3, 2, 3, 4], 7)
    s = head_functions(inspection([], tokens, decoder_self=w))["decoder_self"]
    assert s["induction"][0, 0] == pytest.approx(1.0)
    # the uniform causal head: rows 4, 5, 6 put 1/5, 1/6, 1/7 on their one token after an earlier occurrence
    assert s["induction"][0, 1] == pytest.approx((1 / 5 + 1 / 6 + 1 / 7) / 3)
    assert s["previous_token"][0, 0] == pytest.approx(0.0)
    once = head_functions(inspection([], ["<bos>", "A", "B", "C"], decoder_self=np.eye(4)))
    assert np.isnan(once["decoder_self"]["induction"]).all()
    # "A A": the earlier A is the token just before, j = i − 1, which is no induction (it would be previous-token)
    twice = head_functions(inspection([], ["<bos>", "A", "A"], decoder_self=one_hot_rows([0, 1, 1], 3)))
    assert np.isnan(twice["decoder_self"]["induction"]).all()


def test_padded_positions_do_not_count():
    n, pad = 6, 2  # 4 real tokens, then 2 of padding
    tokens = ["<bos>", "a", "b", "c", "<pad>", "<pad>"]
    prev = one_hot_rows([0, 0, 1, 2, 0, 0], n)  # the padded rows look at key 0: they must not be counted
    allowed = np.tril(np.ones((n, n), bool))
    allowed[:, n - pad :] = False
    s = head_functions(inspection([], tokens, decoder_self=prev, masks={"decoder_self": allowed}))["decoder_self"]
    assert s["previous_token"][0, 0] == pytest.approx(1.0)
    assert s["first_token"][0, 0] == pytest.approx(2 / 4)
    # cross-attention over a padded source, from a padded target: only the 4 × 3 real part is scored
    src = ["a", "b", "<eos>", "<pad>"]
    cross = np.zeros((n, 4))
    cross[:4, :3] = one_hot_rows([0, 1, 2, 2], 3)
    cross[4:, 0] = 1.0  # padded rows
    keys = np.array([True, True, True, False])
    masks = {"decoder_self": allowed, "cross": np.broadcast_to(keys, (n, 4)).copy()}
    c = head_functions(inspection(src, tokens, cross=cross, masks=masks))["cross"]
    assert c["alignment"][0, 0] == pytest.approx(1.0)
    assert c["first_token"][0, 0] == pytest.approx(1 / 4)
    assert c["eos"][0, 0] == pytest.approx(2 / 4)
    assert c["eos"][0, 1] == pytest.approx(1 / 4)  # the uniform head (1/4 on each of 4 keys) over its real rows


def test_a_kind_the_model_lacks_scores_nan():
    encoder, decoder_self, cross = np.zeros((0, 2, 0, 0)), np.ones((1, 2, 2, 2)) / 2, np.zeros((1, 2, 2, 0))
    decoder_only = Inspection([], ["<bos>", "a"], ["a", "<eos>"], encoder, decoder_self, cross, np.zeros(2), True)
    s = head_functions(decoder_only)
    assert s["encoder"]["first_token"].shape == (0, 2)
    assert np.isnan(s["cross"]["alignment"]).all() and s["cross"]["alignment"].shape == (1, 2)


def test_the_copy_task_learns_diagonal_alignment(copy_session_factory):
    """A copy model's cross-attention learns to look at the token to copy next: the best head's alignment rises
    well above its value at step 0 (about 0.4 there, near uniform: 19/49 for a uniform map over 7 keys; about
    0.85 after 200 steps; a few seconds on a laptop's CPU)."""
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    session = copy_session_factory(warmup_steps=50)
    source = "1 2 3 4 5 6"

    def best_alignment() -> float:
        return float(np.nanmax(head_functions(session.inspect(source, source))["cross"]["alignment"]))

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # a tiny model steps fastest on one thread, and a busy machine slows it least
    try:
        before = best_alignment()
        session.train_steps(200)
        after = best_alignment()
    finally:
        torch.set_num_threads(threads)
    assert after > max(before + 0.25, 0.7), (before, after)
