"""What a training job showed, and what the race trains, in sentences (each a Said, for a front
end to say in its reader's language): the dropout placement runs' findings, the race's findings,
the race's two parameter counts and what its local window masks at the task's sequence length;
what a run's held-out accuracy counted against guessing, and the masked task's example fill."""

from __future__ import annotations

import math

import torch

from encoder.core import block
from encoder.core.said import Listed, Quoted, Said, Written, formatted
from encoder.tasks import masked
from encoder.tasks.tasks import get_task, guessing_accuracy
from encoder.train.config import TrainConfig
from encoder.train.trainer import TrainResult


def placement_findings(results: dict[str, TrainResult]) -> Said:
    """What a placement job showed, in a sentence: the held-out accuracies (the best, or that they
    tie), and where the final training loss was highest and lowest."""
    accuracy = {name: r.held_out_accuracy for name, r in results.items()}
    loss = {name: r.final_loss for name, r in results.items()}
    best = max(accuracy.values())
    leaders = [name for name, value in accuracy.items() if round(value, 3) == round(best, 3)]
    highest, lowest = max(loss, key=loss.get), min(loss, key=loss.get)
    steps = max(len(r.history) for r in results.values())
    values = dict(
        best=formatted(best, ".3f"),
        highest=highest,
        highest_loss=formatted(loss[highest], ".3f"),
        lowest=lowest,
        lowest_loss=formatted(loss[lowest], ".3f"),
    )
    if len(leaders) == len(accuracy):
        return Said.plural(
            "In this run of {count} step, every placement reached {best} held-out accuracy; "
            "the final training loss (measured with dropout on) was highest with {highest} "
            "({highest_loss}) and lowest with {lowest} ({lowest_loss}).",
            "In this run of {count} steps, every placement reached {best} held-out accuracy; "
            "the final training loss (measured with dropout on) was highest with {highest} "
            "({highest_loss}) and lowest with {lowest} ({lowest_loss}).",
            steps,
            **values,
        )
    others = Listed(
        Said("{name} {accuracy}", name=name, accuracy=formatted(value, ".3f"))
        for name, value in accuracy.items()
        if name not in leaders
    )
    return Said.plural(
        "In this run of {count} step, {leaders} reached the best held-out accuracy, {best} "
        "({others}); the final training loss (measured with dropout on) was highest with "
        "{highest} ({highest_loss}) and lowest with {lowest} ({lowest_loss}).",
        "In this run of {count} steps, {leaders} reached the best held-out accuracy, {best} "
        "({others}); the final training loss (measured with dropout on) was highest with "
        "{highest} ({highest_loss}) and lowest with {lowest} ({lowest_loss}).",
        steps,
        leaders=_listed(leaders),
        others=others,
        **values,
    )


def _listed(names: list[str]) -> str:
    """'a', 'a and b', 'a and b and c'."""
    said = names[0]
    for name in names[1:]:
        said = Said("{names} and {last}", names=said, last=name)
    return said


def window_masked_pairs(cfg: TrainConfig) -> int:
    """Query-key pairs of one sequence that cfg's local window masks in a local layer: those
    more than attention_window // 2 positions apart (0 without a window)."""
    window = cfg.model.attention_window
    if not window:
        return 0
    position = torch.arange(cfg.seq_len)  # [T]
    apart = (position[:, None] - position[None, :]).abs()  # [T, T]
    return int((apart > window // 2).sum())


def window_sentence(cfg: TrainConfig) -> Said:
    """Whether cfg's local window masks anything at its task's sequence length, in numbers."""
    encoder = cfg.model
    local = [i for i in range(encoder.num_layers) if encoder.is_local(i)]
    if not local:
        return Said("Every layer attends globally.")
    width, reach, T = encoder.attention_window, encoder.attention_window // 2, cfg.seq_len
    masked = window_masked_pairs(cfg)
    global_layers = [i for i in range(encoder.num_layers) if i not in local]
    if masked == 0:
        return Said(
            "At sequence length {length}, the window of {width} ({reach} positions either side) "
            "masks nothing: every query already sees every key, so {local} attend as "
            "global ones do.",
            length=T,
            width=width,
            reach=reach,
            local=_layers(local),
        )
    values = dict(
        length=T,
        width=width,
        reach=reach,
        masked=masked,
        pairs=T * T,
        share=formatted(masked / (T * T), ".0%"),
        local=_layers(local),
    )
    if global_layers:  # "layer 0 stays global", "layers 0 and 3 stay global"
        return Said.plural(
            "At sequence length {length}, the window of {width} lets a query see only the keys "
            "within {reach} positions: it masks {masked} of the {pairs} query-key pairs "
            "({share}) in {local}; {others} stays global.",
            "At sequence length {length}, the window of {width} lets a query see only the keys "
            "within {reach} positions: it masks {masked} of the {pairs} query-key pairs "
            "({share}) in {local}; {others} stay global.",
            len(global_layers),
            others=_layers(global_layers),
            **values,
        )
    return Said(
        "At sequence length {length}, the window of {width} lets a query see only the keys "
        "within {reach} positions: it masks {masked} of the {pairs} query-key pairs "
        "({share}) in {local}.",
        **values,
    )


def _layers(numbers: list[int]) -> Said:
    """ "layer 1" or "layers 1, 2 and 4"."""
    if len(numbers) == 1:
        return Said("layer {layer}", layer=numbers[0])
    return Said("layers {layers} and {last}", layers=Listed(numbers[:-1]), last=numbers[-1])


def race_sizes(runs: dict[str, TrainConfig]) -> Said:
    """The race's two parameter counts and how far apart they are."""
    (bert_name, bert), (modern_name, modern) = runs.items()
    counts = {name: block.parameters(run.model) for name, run in runs.items()}
    apart = counts[modern_name] / counts[bert_name] - 1
    values = dict(
        bert=bert_name,
        bert_count=formatted(counts[bert_name], ","),
        bert_d_ff=bert.model.d_ff,
        modern=modern_name,
        modern_count=formatted(counts[modern_name], ","),
        modern_d_ff=modern.model.d_ff,
        wide=2 * modern.model.d_ff,
        apart=formatted(abs(apart), ".2%"),
    )
    if apart > 0:
        return Said(
            "{bert} has {bert_count} encoder parameters (d_ff {bert_d_ff}); {modern} "
            "{modern_count} with d_ff {modern_d_ff} (GeGLU's linear1 is 2 x {modern_d_ff} = "
            "{wide} wide): {apart} more.",
            **values,
        )
    return Said(
        "{bert} has {bert_count} encoder parameters (d_ff {bert_d_ff}); {modern} "
        "{modern_count} with d_ff {modern_d_ff} (GeGLU's linear1 is 2 x {modern_d_ff} = "
        "{wide} wide): {apart} fewer.",
        **values,
    )


def _first_step_at_or_below(result: TrainResult, loss: float) -> int | None:
    """The first step (1-based) whose training loss is at most `loss`."""
    return next((row["step"] for row in result.history if row["loss"] <= loss), None)


def race_findings(results: dict[str, TrainResult]) -> Said:
    """Which run reached what loss in how many steps and seconds, and when the leader first got
    down to the other's final loss."""
    first, second = (
        Said.plural(
            "{name} reached a training loss of {loss} after {count} step in {seconds} s "
            "(held-out accuracy {accuracy})",
            "{name} reached a training loss of {loss} after {count} steps in {seconds} s "
            "(held-out accuracy {accuracy})",
            len(r.history),
            name=name,
            loss=formatted(r.final_loss, ".3f"),
            seconds=formatted(r.seconds, ".1f"),
            accuracy=_share(r.held_out_accuracy),
        )
        for name, r in results.items()
    )
    said = Said("{first}; {second}", first=first, second=second)
    (leader, led), (other, behind) = sorted(results.items(), key=lambda item: item[1].final_loss)
    if led.final_loss == behind.final_loss:
        return Said("{said}: a tie.", said=said)
    step = _first_step_at_or_below(led, behind.final_loss)
    if step is None:
        return Said("{said}. {leader} ends lower.", said=said, leader=leader)
    return Said(
        "{said}. {leader} ends lower. {leader} first got down to {other}'s final loss at step "
        "{step}, after {seconds} s.",
        said=said,
        leader=leader,
        other=other,
        step=step,
        seconds=formatted(led.elapsed[step - 1], ".1f"),
    )


def _share(value: float) -> Said | Written:
    return Said("not measured") if math.isnan(value) else formatted(value, ".1%")


def held_out_said(result: TrainResult) -> Said:
    """What the held-out accuracy counted, and what guessing without reading the input scores
    there (so a run that did not learn says so)."""
    cfg = result.config
    task = get_task(cfg.task)
    chance = formatted(guessing_accuracy(cfg.task, cfg.seq_len, cfg.vocab), ".1%")
    accuracy = _share(result.held_out_accuracy)
    if not task.reads_words:
        return Said(
            "Held-out accuracy: {accuracy} per token, on {count} fresh sequences never trained "
            "on; guessing without reading the input scores {chance}.",
            accuracy=accuracy,
            count=result.held_out_examples,
            chance=chance,
        )
    word = task.class_name(masked.most_frequent_word(), cfg.model.vocab_size)
    return Said(
        "Held-out accuracy: {accuracy} of the hidden words right (top-1), in {count} maskings "
        "of the {sentences} corpus sentences never trained on; always answering {word}, the "
        "most frequent word, scores {chance}.",
        accuracy=accuracy,
        count=result.held_out_examples,
        sentences=len(masked.sentence_split(held_out=True)),
        word=Quoted(word),
        chance=chance,
    )


@torch.no_grad()
def example_fill(result: TrainResult, top: int = 5) -> Said | None:
    """The masked task's trained model on its example sentence (a held-out one): its top words
    at the [MASK], each with its probability; None for another task."""
    task = get_task(result.config.task)
    if not task.reads_words:
        return None
    model, vocab = result.model.eval(), result.config.model.vocab_size
    example = task.example(result.config.seq_len, vocab)
    ids = torch.tensor([task.check_text(example, task.tokenizer(vocab), result.config.seq_len)])
    position = ids[0].tolist().index(masked.MASK)
    states = model.encoder(ids.to(model.encoder.device))[0, position]  # [d]
    probabilities = model.head(states).softmax(-1).cpu()  # [vocab]
    best = probabilities.topk(top)
    words = [
        Said(
            "{word} {probability}",
            word=Quoted(task.class_name(i, vocab)),
            probability=formatted(p, ".0%"),
        )
        for p, i in zip(best.values.tolist(), best.indices.tolist(), strict=True)
    ]
    return Said(
        "The trained model reads {sentence}, a sentence it never trained on, and fills the "
        "[MASK] with: {words}.",
        sentence=Quoted(example),
        words=Listed(words),
    )
