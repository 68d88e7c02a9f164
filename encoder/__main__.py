"""Command line: `python -m encoder trace|profile TEXT [options]` and `... train [options]`.

    python -m encoder train --task reverse --save reverse-model --json
    python -m encoder trace --checkpoint reverse-model "3 1 4 1 5 9 2 6"
    python -m encoder profile "The cat sat." --heads 8 --d-model 512 --layers 6 --json

Each subcommand is registered by one `add_*_command(subparsers)` function listed in COMMANDS; it
sets `run`, which takes the parsed arguments and returns the exit code. A ValueError (a bad
configuration, a run too large) becomes a one-line error and exit code 2.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass

import pandas as pd
from tokenizers import Tokenizer

from encoder.core.capture import Trace
from encoder.core.config import EncoderConfig
from encoder.core.model import TransformerEncoder, available_devices
from encoder.core.options import (
    BY_FIELD,
    OPTIONS,
    ArchOption,
    config_values,
    key_values,
    norm_first_of,
    placement_of,
)
from encoder.inspect.cost import CostReport, CostSettings, cost_report
from encoder.inspect.gradients import LOSS, WEIGHTS
from encoder.inspect.ledger import cost_summary, shape_ledger
from encoder.inspect.limits import check_run
from encoder.inspect.timing import CLOCK_NAMES, clock_kind, synchronize
from encoder.io.checkpoints import load_checkpoint
from encoder.io.task_model import TaskModel
from encoder.io.tokenize import TokenizedBatch, load_tokenizer, tokenize
from encoder.train.tasks import TASKS, example_sequence
from encoder.train.trainer import StepMetrics, TrainConfig, torch_threads, train

USAGE_ERROR = 2
PRINTED_COLUMNS = ["layer", "operation", "hook", "input_shape", "output_shape", "params", "flops"]


def add_architecture_option(
    parser: argparse.ArgumentParser, option: ArchOption, shown: object, **settings: object
) -> None:
    """The option's flag: one of its choices (named options) or a whole number, its help saying
    the default `shown`; `settings` go to add_argument (e.g. the parser's own default)."""
    typed = {"choices": option.choices} if option.named else {"type": int}
    parser.add_argument(option.flag, help=f"{option.help} (default {shown})", **typed, **settings)


def add_model_options(parser: argparse.ArgumentParser) -> None:
    """TEXT, the architecture options, --device, and --pretrained or --checkpoint DIR: how the
    commands that run text through an encoder (trace, profile) choose it."""
    parser.add_argument("sentences", nargs="+", metavar="TEXT", help="one sentence per argument")
    defaults = key_values(EncoderConfig()) | {"d_ff": "4 x d-model"}
    for option in OPTIONS:
        add_architecture_option(parser, option, defaults[option.key])
    parser.add_argument("--device", default="cpu", help="cpu, cuda:N or mps (default cpu)")
    weights = parser.add_mutually_exclusive_group()
    weights.add_argument(
        "--pretrained",
        action="store_true",
        help="use the bundled all-MiniLM-L6-v2 weights instead of random ones",
    )
    weights.add_argument(
        "--checkpoint",
        metavar="DIR",
        help="a checkpoint directory: BERT-style, or saved by `train --save` (then each TEXT is "
        'one sequence of the task\'s symbols, e.g. "3 1 4 1 5 9 2 6")',
    )


def add_trace_command(subparsers: argparse._SubParsersAction) -> None:
    """`trace TEXT [TEXT ...] [architecture options] [--pretrained] [--device D]`."""
    parser = subparsers.add_parser(
        "trace",
        help="run text through an encoder; print the shape ledger and the run's costs",
        description="Run sentences through an encoder as one padded batch and print every "
        "operation's shapes, parameters and FLOPs, then a summary of the run.",
    )
    add_model_options(parser)
    parser.set_defaults(run=run_trace)


def add_threads_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--threads",
        type=int,
        help="CPU threads for torch (default: torch's choice, one per core); 1 is barely slower "
        "for these tiny models and far faster when other programs busy the cores",
    )


def add_profile_command(subparsers: argparse._SubParsersAction) -> None:
    """`profile TEXT [TEXT ...] [architecture options] [--pretrained] [--device D] [--json]`."""
    parser = subparsers.add_parser(
        "profile",
        help="measure time per operation, scaling with length, training memory, gradient norms",
        description="Measure, on this machine, each operation's time in a forward pass of the "
        "sentences, how the time grows with the number of tokens, what training keeps for "
        "backward with and without gradient checkpointing (pre- and post-norm), and the "
        "gradient norms at initialisation against Xiong et al. 2020.",
    )
    add_model_options(parser)
    parser.add_argument(
        "--budget",
        type=float,
        default=CostSettings().budget_s,
        metavar="SECONDS",
        help="about how long all measures may take together (default %(default)s)",
    )
    add_threads_option(parser)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.set_defaults(run=run_profile)


def add_train_command(subparsers: argparse._SubParsersAction) -> None:
    """`train [--task T] [--norm pre|post] [--layers N] ... [--save DIR] [--json]`."""
    parser = subparsers.add_parser(
        "train", help="train a tiny encoder on a toy task and report held-out accuracy"
    )
    default = TrainConfig()
    parser.add_argument("--task", choices=tuple(TASKS), default=default.task)
    for field in ("norm_first", "num_layers"):
        option = BY_FIELD[field]
        chosen = option.value_of(default)
        add_architecture_option(parser, option, chosen, default=chosen)
    parser.add_argument("--warmup", type=int, default=default.warmup_steps, metavar="STEPS")
    parser.add_argument("--steps", type=int, default=default.steps)
    parser.add_argument("--lr", type=float, default=default.lr)
    parser.add_argument("--seed", type=int, default=default.seed)
    add_threads_option(parser)
    parser.add_argument(
        "--checkpoint-blocks",
        action="store_true",
        help="gradient checkpointing: keep only each block's input for backward and recompute "
        "the block (less memory, about one more forward pass of time; the same losses)",
    )
    parser.add_argument(
        "--save",
        metavar="DIR",
        help="save the trained model in DIR (config.json, model.safetensors, tokenizer.json); "
        "open it with `trace --checkpoint DIR`",
    )
    parser.add_argument("--json", action="store_true", help="end with one JSON line of results")
    parser.set_defaults(run=run_train)


COMMANDS: tuple[Callable[[argparse._SubParsersAction], None], ...] = (
    add_trace_command,
    add_train_command,
    add_profile_command,
)


@dataclass
class ChosenModel:
    """The model the trace options name, with its tokenizer and a description for the summary."""

    cfg: EncoderConfig
    tokenizer: Tokenizer
    description: str
    model: TransformerEncoder | None = None  # None: random weights, built once the run fits
    task_model: TaskModel | None = None  # a model trained here: inputs checked, answers printed


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
    the bundled MiniLM, or a checkpoint directory."""
    if not args.pretrained and args.checkpoint is None:
        tokenizer = load_tokenizer()
        cfg = random_config(args, tokenizer.get_vocab_size())
        return ChosenModel(cfg, tokenizer, describe(cfg, f"random weights (seed {cfg.seed})"))
    given = [option.flag for option in OPTIONS if getattr(args, option.dest) is not None]
    option = "--pretrained" if args.pretrained else "--checkpoint"
    if given:
        raise ValueError(f"{option} fixes the architecture; drop {', '.join(given)}")
    checkpoint = load_checkpoint(args.checkpoint)
    cfg = checkpoint.encoder.cfg
    if args.pretrained:
        source = "pretrained all-MiniLM-L6-v2"
    elif checkpoint.task_model is not None:
        source = f"{checkpoint.task_model.task} task model {args.checkpoint}"
    else:
        source = f"checkpoint {args.checkpoint}"
    return ChosenModel(
        cfg, checkpoint.tokenizer, describe(cfg, source), checkpoint.encoder, checkpoint.task_model
    )


def check_task_sentences(task_model: TaskModel, sentences: list[str]) -> None:
    """Each sentence must be one sequence the task model reads; ValueError naming the first bad."""
    for index, sentence in enumerate(sentences, start=1):
        try:
            task_model.check_text(sentence)
        except ValueError as error:
            raise ValueError(f"sentence {index}: {error}") from error


def timed_trace(model: TransformerEncoder, batch: TokenizedBatch) -> tuple[Trace, float]:
    """Trace the batch (after one warm-up pass); return the trace and its time in ms."""
    input_ids = batch.input_ids.to(model.device)
    attention_mask = batch.attention_mask.to(model.device)
    model.trace(input_ids, attention_mask)  # warm-up: first calls pay one-off set-up costs
    synchronize(model.device)
    start = time.perf_counter()
    trace = model.trace(input_ids, attention_mask)
    synchronize(model.device)
    return trace, (time.perf_counter() - start) * 1000


def format_ledger(ledger: pd.DataFrame) -> str:
    """The ledger's main columns as a plain-text table, counts with thousands separators."""
    counts = {column: "{:,}".format for column in ("params", "flops")}
    return ledger[PRINTED_COLUMNS].to_string(index=False, formatters=counts)


def format_summary(
    batch: TokenizedBatch, costs: dict, description: str, milliseconds: float, device: str
) -> list[str]:
    """The run in lines: model, device, each sentence's tokens, cuts, sizes, costs, time."""
    lines = [f"model: {description}", f"device: {device}"]
    for index, tokens in enumerate(batch.tokens, start=1):
        lines.append(f"sentence {index} ({len(tokens)} tokens): {' '.join(tokens)}")
    for cut in batch.truncations:
        kept_text = batch.sentences[cut.sentence_index][: cut.kept_chars]
        lines.append(
            f"sentence {cut.sentence_index + 1} was cut from {cut.total_tokens} to "
            f"{cut.kept_tokens} tokens, after {kept_text[-40:]!r}"
        )
    flops = costs["flops"]
    lines += [
        f"batch: {costs['batch']} sentence(s), {costs['tokens']:,} tokens "
        f"({costs['padded_tokens']:,} with padding)",
        f"parameters: {costs['params']:,}",
        f"FLOPs: {flops:,} (attention {costs['attention_flops']:,}, projections "
        f"{costs['projection_flops']:,}, feed-forward {costs['ffn_flops']:,})",
        f"activations: {costs['activation_bytes'] / 1e6:,.1f} MB",
        f"forward: {milliseconds:.1f} ms",
    ]
    return lines


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


def run_trace(args: argparse.Namespace) -> int:
    """Check the options and bounds, run one traced forward pass, print ledger and summary."""
    chosen, batch, model = prepare_run(args)
    trace, milliseconds = timed_trace(model, batch)
    costs = cost_summary(chosen.cfg, trace)
    print(format_ledger(shape_ledger(chosen.cfg, *batch.input_ids.shape)))
    print()
    print("\n".join(format_summary(batch, costs, chosen.description, milliseconds, args.device)))
    if chosen.task_model is not None:
        answers = chosen.task_model.predicted_classes(trace.output)
        for index, answer in enumerate(answers, start=1):
            print(f"prediction {index} ({chosen.task_model.task}): {' '.join(answer)}")
    return 0


def check_threads(args: argparse.Namespace) -> None:
    if args.threads is not None and args.threads < 1:
        raise ValueError(f"--threads {args.threads} must be at least 1")


Column = tuple[str, str, str]  # (key in the rows, header, format)


def _table(rows: list[dict], columns: list[Column]) -> str:
    """Rows as a plain-text table of the given columns, each value in its column's format."""
    frame = pd.DataFrame([{header: fmt.format(row[key]) for key, header, fmt in columns}
                          for row in rows])  # fmt: skip
    return frame.to_string(index=False)


OPERATION_COLUMNS = [("operation", "operation", "{}"), ("ms", "ms", "{:.3f}"),
                     ("time_share", "time", "{:.1%}"), ("flop_share", "FLOPs", "{:.1%}"),
                     ("gflops_per_s", "GFLOP/s", "{:.1f}")]  # fmt: skip
SCALING_COLUMNS = [("tokens", "tokens", "{}"), ("ms", "ms", "{:.2f}"),
                   ("attention_flops", "attention FLOPs (n^2)", "{:,}"),
                   ("ffn_flops", "feed-forward FLOPs", "{:,}")]  # fmt: skip
MEMORY_COLUMNS = [("norm", "norm", "{}"), ("saved_bytes", "saved bytes", "{:,}"),
                  ("saved_bytes_checkpointed", "checkpointed", "{:,}"),
                  ("ms", "forward+backward ms", "{:.1f}"),
                  ("ms_checkpointed", "checkpointed ms", "{:.1f}")]  # fmt: skip
GRADIENT_COLUMNS = [("layer", "layer", "{}")] + [(w, w, "{:.4f}") for w in WEIGHTS]
DEPTH_COLUMNS = [("layers", "layers", "{}"), ("pre", "pre", "{:.4f}"), ("post", "post", "{:.4f}")]


def format_profile(report: CostReport, description: str) -> list[str]:
    """The report as readable lines: one section per measure, tables where there are rows."""
    ops, scaling, slowest = report.ops, report.scaling, report.ops.slowest()
    exponents, by_operation = scaling.exponents, ops.by_operation()
    slowest_kind = ops.slowest_operation()
    operations = [
        row | {"operation": row["operation"] + ("" if row["measured"] else " *")}
        for row in by_operation
    ]
    memory = [{"norm": norm} | m.to_dict() for norm, m in report.train_memory.items()]
    lines = [
        f"model: {description}",
        f"device: {report.device}, batch {report.batch[0]} x {report.batch[1]} tokens, "
        f"measured in {report.seconds:.1f} s; times are {CLOCK_NAMES[clock_kind(report.device)]}",
        "",
        f"forward pass: {ops.total_ms:.2f} ms (median of {ops.repeats}); the operations' "
        f"times add up to {ops.ops_ms:.2f} ms ({ops.ops_over_total:.0%})",
        f"slowest operation: {slowest_kind['operation']}, {slowest_kind['ms']:.3f} ms in all "
        f"layers ({slowest_kind['time_share']:.0%} of the time, {slowest_kind['flop_share']:.0%} "
        f"of the FLOPs); in one layer: {slowest.name}, {slowest.ms:.3f} ms",
        "time per operation, all layers together (* = time split by FLOPs with its neighbours):",
        _table(operations, OPERATION_COLUMNS),
        "",
        "scaling: one sentence of n random tokens",
        _table([asdict(point) for point in scaling.points], SCALING_COLUMNS),
        f"time grows like n^{exponents['ms']:.2f} over these lengths (n^"
        f"{exponents['ms_longest']:.2f} between the two longest); attention's FLOPs overtake "
        f"the feed-forward's at n = {scaling.crossover_tokens:,} tokens",
        "",
        "training memory: bytes autograd saves for backward in one forward pass of this batch",
        _table(memory, MEMORY_COLUMNS),
        "",
        f"gradient norms at initialisation; loss: {LOSS}",
    ]
    for norm, rows in report.grad_norms.items():
        lines += [f"{norm}-norm:", _table(rows, GRADIENT_COLUMNS)]
    lines += [
        "the last layer's W2 gradient by depth:",
        _table(report.last_w2_by_depth, DEPTH_COLUMNS),
        "",
        "against Xiong et al. 2020:",
        *(f"- {finding.sentence()}" for finding in report.findings),
    ]
    return lines


def run_profile(args: argparse.Namespace) -> int:
    """Measure the model's costs within the budget; print them as tables, or as one JSON object."""
    if not args.budget > 0:
        raise ValueError(f"--budget {args.budget} must be a positive number of seconds")
    check_threads(args)
    chosen, batch, model = prepare_run(args)
    ids, mask = (t.to(model.device) for t in (batch.input_ids, batch.attention_mask))
    with torch_threads(args.threads):
        report = cost_report(model, ids, mask, CostSettings(budget_s=args.budget))
    if args.json:
        print(json.dumps({"model": chosen.description, **report.to_dict()}))
    else:
        print("\n".join(format_profile(report, chosen.description)))
    return 0


def run_train(args: argparse.Namespace) -> int:
    """Train as the arguments say, print progress every tenth of the run, then the results;
    with --save, save the model; with --json, end with the results as one JSON line."""
    cfg = TrainConfig(  # a ValueError here becomes the CLI's one-line error, exit code 2
        task=args.task,
        norm_first=norm_first_of(args.norm),
        num_layers=args.layers,
        warmup_steps=args.warmup,
        steps=args.steps,
        lr=args.lr,
        seed=args.seed,
        checkpoint_blocks=args.checkpoint_blocks,
    )
    check_threads(args)
    every = max(1, cfg.steps // 10)
    checkpointing = ", blocks checkpointed" if cfg.checkpoint_blocks else ""
    print(
        f"training {cfg.task} ({args.norm}-norm, {cfg.num_layers} layers{checkpointing}) "
        f"for {cfg.steps} steps"
    )

    def report(m: StepMetrics) -> None:
        if m.step % every == 0 or m.step == cfg.steps:
            print(f"step {m.step:5d}  loss {m.loss:.4f}  acc {m.accuracy:.3f}  lr {m.lr:.2e}")

    with torch_threads(args.threads):
        result = train(cfg, report)
    summary = result.summary()
    print(
        f"held-out accuracy {summary['accuracy']:.4f} on {summary['held_out_examples']} unseen "
        f"sequences (whole sequences right: {summary['sequence_accuracy']:.4f}), "
        f"{summary['seconds']:.1f} s"
    )
    if args.save is not None:
        saved = TaskModel.from_result(result).save(args.save)
        summary["checkpoint"] = str(saved)
        example = example_sequence(cfg.seq_len, cfg.vocab)
        print(f"saved to {saved}")
        print(f'open it with: python -m encoder trace --checkpoint {saved} "{example}"')
    if args.json:
        print(json.dumps(summary))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m encoder", description="Look inside a Transformer encoder."
    )
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for add_command in COMMANDS:
        add_command(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.run(args)
    except (ValueError, OSError) as error:  # OSError: a checkpoint path that cannot be used
        print(f"error: {error}", file=sys.stderr)
        return USAGE_ERROR


if __name__ == "__main__":
    sys.exit(main())
