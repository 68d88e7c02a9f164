"""The model the trace and profile flags choose: random weights of the flags' architecture, the
bundled MiniLM, or a checkpoint (a directory, or the name of a model found on this machine, as
encoder.io.finder finds them); and the run checked against the device and bounds."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

from tokenizers import Tokenizer

from encoder.core.config import EncoderConfig
from encoder.core.model import TransformerEncoder, available_devices
from encoder.core.options import OPTIONS, config_values, placement_of
from encoder.inspect.limits import check_run
from encoder.io.checkpoints import Checkpoint, load_checkpoint
from encoder.io.finder import checkpoint_path
from encoder.io.task_model import TaskModel
from encoder.io.tokenize import TokenizedBatch, bundled_model_dir, load_tokenizer, tokenize


@dataclass
class ChosenModel:
    """The model the trace options name, with its tokenizer and a description for the summary."""

    cfg: EncoderConfig
    tokenizer: Tokenizer
    description: str
    model: TransformerEncoder | None = None  # None: random weights, built once the run fits
    task_model: TaskModel | None = None  # a model trained here: inputs checked, answers printed
    checkpoint: Checkpoint | None = None  # the loaded checkpoint (its masked-LM head), if any


def random_config(args: argparse.Namespace, vocab_size: int) -> EncoderConfig:
    """The EncoderConfig the trace options describe (unset options keep the defaults)."""
    chosen = {o.key: getattr(args, o.dest) for o in OPTIONS if getattr(args, o.dest) is not None}
    chosen.setdefault("d_ff", 4 * chosen.get("d_model", EncoderConfig().d_model))
    return EncoderConfig(vocab_size=vocab_size, **config_values(chosen))


def describe(cfg: EncoderConfig, source: str) -> str:
    return (
        f"{source}, {placement_of(cfg.norm_first)}-norm, {cfg.num_layers} layers x "
        f"{cfg.num_heads} heads, d_model {cfg.d_model}, d_ff {cfg.d_ff}, {cfg.activation}"
    )


def choose_model(args: argparse.Namespace) -> ChosenModel:
    """Random weights (the model is built later, once the run is known to be within bounds),
    the bundled MiniLM, or a checkpoint: a directory, or a model found by its name
    ("FacebookAI/roberta-base": ENCODER_EXPLORER_MODELS, the Hugging Face cache)."""
    if not args.pretrained and args.checkpoint is None:
        tokenizer = load_tokenizer()
        cfg = random_config(args, tokenizer.get_vocab_size())
        return ChosenModel(cfg, tokenizer, describe(cfg, f"random weights (seed {cfg.seed})"))
    given = [option.flag for option in OPTIONS if getattr(args, option.dest) is not None]
    option = "--pretrained" if args.pretrained else "--checkpoint"
    if given:
        raise ValueError(f"{option} fixes the architecture; drop {', '.join(given)}")
    path = checkpoint_path(args.checkpoint) if args.checkpoint else None
    checkpoint = load_checkpoint(path)
    cfg = checkpoint.encoder.cfg
    # a model found by its name: its directory too
    where = args.checkpoint if str(path) == args.checkpoint else f"{args.checkpoint} ({path})"
    if args.pretrained:
        source = "pretrained all-MiniLM-L6-v2"
    elif checkpoint.task_model is not None:
        source = f"{checkpoint.task_model.task} task model {where}"
    else:
        source = f"checkpoint {where}"
    return ChosenModel(
        cfg,
        checkpoint.tokenizer,
        describe(cfg, source),
        checkpoint.encoder,
        checkpoint.task_model,
        checkpoint,
    )


def model_directory(args: argparse.Namespace) -> Path | None:
    """The directory the flags' model was read from (None: random weights)."""
    if args.pretrained:
        return bundled_model_dir()
    return checkpoint_path(args.checkpoint) if args.checkpoint else None


def check_task_sentences(task_model: TaskModel, sentences: list[str]) -> None:
    """Each sentence must be one sequence the task model reads; ValueError naming the first bad."""
    for index, sentence in enumerate(sentences, start=1):
        try:
            task_model.check_text(sentence)
        except ValueError as error:
            raise ValueError(f"sentence {index}: {error}") from error


def prepare_run(args: argparse.Namespace) -> tuple[ChosenModel, TokenizedBatch, TransformerEncoder]:
    """Check the device, the model options, the sentences and the bounds; then build (or load)
    the model on the device."""
    if args.device not in available_devices():
        raise ValueError(
            f"device {args.device!r} is not available here; use one of {available_devices()}"
        )
    chosen = choose_model(args)
    if chosen.task_model is not None:
        check_task_sentences(chosen.task_model, args.sentences)
    batch = tokenize(args.sentences, chosen.tokenizer, max_len=chosen.cfg.max_len)
    check_run(chosen.cfg, *batch.input_ids.shape)
    model = chosen.model if chosen.model is not None else TransformerEncoder(chosen.cfg).eval()
    return chosen, batch, model.to(args.device)
