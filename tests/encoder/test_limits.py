import pytest

from encoder import EncoderConfig, TransformerEncoder
from encoder.core import block
from encoder.core.capture import capturing
from encoder.inspect.limits import (
    MAX_SENTENCES,
    RunTooLarge,
    check_run,
    estimate_activation_bytes,
)


@pytest.mark.parametrize(
    "overrides",
    [
        {},
        {"norm_first": False},
        {"norm_type": "rmsnorm"},
        {"positional": "learned", "type_vocab_size": 2, "embedding_norm": True},
    ],
)
def test_parameter_estimate_equals_the_built_model(overrides):
    cfg = EncoderConfig(vocab_size=50, d_model=32, num_heads=4, num_layers=3, d_ff=64, **overrides)
    model = TransformerEncoder(cfg)
    assert block.parameters(cfg) == sum(p.numel() for p in model.parameters())


@pytest.mark.parametrize("norm_first", [True, False])
def test_activation_estimate_is_the_bytes_of_every_captured_tensor(norm_first):
    import torch

    cfg = EncoderConfig(
        vocab_size=50, d_model=32, num_heads=4, num_layers=2, d_ff=64, norm_first=norm_first
    )
    model = TransformerEncoder(cfg).eval()
    with torch.no_grad(), capturing() as store:
        model(torch.zeros(3, 7, dtype=torch.long))
    captured = sum(t.numel() * t.element_size() for t in store.values())
    assert estimate_activation_bytes(cfg, 3, 7) == captured


def test_too_many_parameters_is_refused_with_the_estimate_and_the_limit():
    cfg = EncoderConfig(d_model=1024, num_heads=16, num_layers=24, d_ff=8192)
    with pytest.raises(RunTooLarge, match=r"about 535 million parameters.*limit is 150 million"):
        check_run(cfg, 1, 10)


def test_too_many_activations_and_sentences_are_refused():
    cfg = EncoderConfig(d_model=64, num_heads=64, num_layers=24, d_ff=128)
    with pytest.raises(RunTooLarge, match=r"GB of intermediate tensors.*limit is 1.5 GB"):
        check_run(cfg, 16, 512)
    with pytest.raises(RunTooLarge, match=f"limit of {MAX_SENTENCES}"):
        check_run(cfg, MAX_SENTENCES + 1, 5)
    check_run(cfg, 2, 16)  # a classroom-sized run passes
