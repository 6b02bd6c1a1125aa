"""The tiny transformer trained five ways: same losses, the expected collectives, and a GPipe
schedule whose idle ticks are the bubble. Needs 8 simulated CPU devices (tests/conftest.py)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import PartitionSpec as P

from scalebook import tinytransformer as tt
from scalebook.hlo import hlo_collectives
from scalebook.parallelism import pipeline_bubble_fraction

CFG = tt.Config()


@pytest.fixture(scope="module")
def runs():
    return {s: tt.train(s, steps=20) for s in tt.STRATEGIES}


def kinds(result):
    return {(c.kind, c.axes) for c in result.collectives}


# --------------------------------------------------------------------------- the model


def test_param_count_by_hand():
    # 2·V·D + T·D + L·(4·D² + 2·D·F) = 8192 + 1024 + 4·(16384 + 32768)
    assert tt.param_count(CFG) == 205_824
    leaves = jax.tree.leaves(tt.init_params(CFG))
    assert sum(x.size for x in leaves) == 205_824


def test_init_is_deterministic_in_the_key():
    a = tt.init_params(CFG, jax.random.key(3))
    b = tt.init_params(CFG, jax.random.key(3))
    c = tt.init_params(CFG, jax.random.key(4))
    assert all(bool(jnp.array_equal(x, y)) for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)))
    assert not bool(jnp.array_equal(a["embed"], c["embed"]))


@pytest.mark.slow  # runs the model op by op under JAX
def test_initial_loss_is_near_log_vocab():
    # random init predicts roughly uniformly: about ln(64) = 4.16 nats
    loss = float(tt.loss_fn(tt.init_params(CFG), tt.make_batch(CFG), CFG))
    assert 3.5 < loss < 6.0


def test_batch_targets_are_inputs_shifted():
    batch = tt.make_batch(CFG)
    assert batch["inputs"].shape == (CFG.batch, CFG.seq_len)
    assert bool(jnp.array_equal(batch["inputs"][:, 1:], batch["targets"][:, :-1]))


def test_specs_match_parameter_structure():
    params = tt.init_params(CFG)
    for strategy in tt.STRATEGIES:
        specs = tt.param_specs(strategy, CFG)
        assert jax.tree.structure(params) == jax.tree.structure(
            specs, is_leaf=lambda x: isinstance(x, P))
    assert tt.param_specs("tp", CFG)["layers"][0]["w_in"] == P(None, "model")
    assert tt.param_specs("fsdp_tp", CFG)["layers"][0]["w_out"] == P("model", "data")
    assert tt.batch_spec("tp") == P()
    assert tt.batch_spec("fsdp_tp") == P("data", None)


# --------------------------------------------------------------------------- training


@pytest.mark.slow  # trains every strategy under JAX (the runs fixture: minutes)
def test_every_strategy_matches_single_device_losses(runs):
    base = np.array(runs["single"].losses)
    assert len(base) == 20
    for strategy in tt.STRATEGIES:
        np.testing.assert_allclose(runs[strategy].losses, base, rtol=1e-4, err_msg=strategy)


@pytest.mark.slow  # trains every strategy under JAX (the runs fixture: minutes)
def test_losses_decrease(runs):
    losses = np.array(runs["single"].losses)
    assert np.all(np.diff(losses) < 0)
    assert losses[-1] < 0.2 * losses[0]


@pytest.mark.slow  # trains every strategy under JAX (the runs fixture: minutes)
def test_single_has_no_collectives(runs):
    assert runs["single"].collectives == []


@pytest.mark.slow  # trains every strategy under JAX (the runs fixture: minutes)
def test_dp_allreduces_gradients_over_data(runs):
    assert kinds(runs["dp"]) == {("AllReduce", ("data",))}


@pytest.mark.slow  # trains every strategy under JAX (the runs fixture: minutes)
def test_fsdp_gathers_weights_and_reduces_gradients(runs):
    k = kinds(runs["fsdp"])
    assert ("AllGather", ("data",)) in k
    assert ("ReduceScatter", ("data",)) in k or ("AllReduce", ("data",)) in k
    assert all(axes == ("data",) for _, axes in k)


@pytest.mark.slow  # trains every strategy under JAX (the runs fixture: minutes)
def test_tp_allreduces_over_model_only(runs):
    assert kinds(runs["tp"]) == {("AllReduce", ("model",))}
    # two per layer forward, two backward
    assert len(runs["tp"].collectives) == 4 * CFG.n_layers


@pytest.mark.slow  # trains every strategy under JAX (the runs fixture: minutes)
def test_fsdp_tp_uses_both_axes(runs):
    k = kinds(runs["fsdp_tp"])
    assert ("AllGather", ("data",)) in k
    assert ("AllReduce", ("model",)) in k
    assert ("ReduceScatter", ("data",)) in k or ("AllReduce", ("data",)) in k


def test_predicted_bytes_by_hand():
    P_all, A = 205_824, CFG.tokens * CFG.d_model
    assert tt.predicted_comm_bytes("dp", CFG) == {"AllReduce(data)": 4 * P_all + 4}
    assert tt.predicted_comm_bytes("tp", CFG) == {"AllReduce(model)": 4 * 4 * 4 * A}
    rs = tt.predicted_comm_bytes("fsdp", CFG, reduce_scatter=True)
    assert rs == {"AllGather(data)": 4 * P_all, "ReduceScatter(data)": 4 * P_all // 8,
                  "AllReduce(data)": 4}
    two_d = tt.predicted_comm_bytes("fsdp_tp", CFG)
    assert two_d["AllGather(data)"] == 4 * 196_608 // 4  # block weights / model degree
    assert two_d["AllReduce(model)"] == 4 * 4 * 4 * A // 2
    assert tt.predicted_comm_bytes("single", CFG) == {}


@pytest.mark.slow  # trains every strategy under JAX (the runs fixture: minutes)
def test_compiled_bytes_equal_predicted(runs):
    for strategy in tt.STRATEGIES:
        compiled = tt.compiled_comm_bytes(runs[strategy].collectives)
        has_rs = any(c.kind == "ReduceScatter" for c in runs[strategy].collectives)
        assert compiled == tt.predicted_comm_bytes(strategy, CFG, reduce_scatter=has_rs), strategy


@pytest.mark.slow  # trains every strategy under JAX (the runs fixture: minutes)
def test_step_hlo_reparses_to_the_same_collectives(runs):
    r = runs["fsdp_tp"]
    assert hlo_collectives(r.step_hlo, r.mesh) == r.collectives


# --------------------------------------------------------------------------- pipeline


@pytest.mark.slow  # JAX compiles a shard_map pipeline per microbatch count
@pytest.mark.parametrize("microbatches", [1, 2, 4, 8])
def test_pipeline_matches_forward_and_bubble(microbatches):
    params = tt.init_params(CFG)
    batch = tt.make_batch(CFG)
    x = params["embed"][batch["inputs"]] + params["pos"][None]
    result = tt.pipeline_forward(params, x, stages=4, microbatches=microbatches, cfg=CFG)
    np.testing.assert_allclose(result.output, tt.forward_layers(params, x, CFG), atol=1e-5)
    K, M = 4, microbatches
    assert result.total_ticks == K * (M + K - 1)
    assert result.idle_ticks == K * (K - 1)
    assert result.idle_fraction == pytest.approx(pipeline_bubble_fraction(K, M), rel=1e-12)
    out, idle = result  # unpacks as (output, idle ticks)
    assert idle == result.idle_ticks
    # one send per tick but the last, each one microbatch of activations
    mesh = jax.make_mesh((K,), ("stage",), devices=jax.devices()[:K])
    sends = hlo_collectives(result.step_hlo, mesh)
    assert [c.kind for c in sends] == ["CollectivePermute"] * (M + K - 2)
    assert all(c.nbytes == 4 * (CFG.batch // M) * CFG.seq_len * CFG.d_model for c in sends)


# --------------------------------------------------------------------------- bad input


def test_bad_input_raises():
    with pytest.raises(ValueError, match="strategy"):
        tt.train("zero-7")
    with pytest.raises(ValueError, match="steps"):
        tt.train("single", steps=0)
    with pytest.raises(ValueError, match="n_heads"):
        tt.Config(d_model=30, n_heads=8)
    with pytest.raises(ValueError, match="batch"):
        tt.Config(batch=0)
    params = tt.init_params(CFG)
    x = jnp.zeros((CFG.batch, CFG.seq_len, CFG.d_model))
    with pytest.raises(ValueError, match="microbatches"):
        tt.pipeline_forward(params, x, stages=4, microbatches=3, cfg=CFG)
    with pytest.raises(ValueError, match="stages"):
        tt.pipeline_forward(params, x, stages=3, microbatches=2, cfg=CFG)
    with pytest.raises(ValueError, match="mesh axes"):
        tt.train("tp", mesh=tt.make_mesh("dp"))
