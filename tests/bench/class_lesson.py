"""A class following its teacher, measured (`python tests/bench/class_load.py --questions Q`).

A teacher (presenter mode, 1280 x 720) and N students (390 x 844), each a browser context in one
headless Chromium, on one server (classes in SQLite) and on two replicas behind nginx sharing
Redis. The teacher starts a class on lesson step 2; the students open the student link; the
teacher goes to step 3, which asks which token the lesson's query attends to most; for each of
Q questions the teacher picks another query token (a new question, the students follow), opens
it, every student clicks a token and sends it, and the teacher reveals it. Measured:
- a student's click answered on their own page: Send to "Counted" (p50 / p95);
- the tally on the teacher's page: Send to the teacher's "k of N students answered" (p95);
- the step (or query) change reaching every student: the teacher's click to the student's page
  showing the new step or question (p95), each page's own time (stamped in the page, so that
  the students are not timed one after another);
- every answer counted exactly once: after each reveal the store's tally (read as any member
  may once revealed) against what the students sent: lost and duplicated answers;
- the CPU seconds the app's servers used over the class's wall time (tests/bench/class_load.py
  reads them from /proc): the cores the servers kept busy; the rest went to the browsers.
`--redis-outage S` (replicas only) stops Redis (SIGSTOP: unreachable, nothing lost) for S seconds
while half the students of the middle question answer: each answer is counted, or refused with
a message on the student's page (then sent again once Redis is back), or lost (neither).
A Send that shows neither "Counted" nor the refusal within UNANSWERED_MS is sent again, as a
student would, and counted in its own column (what the page showed is printed, the page saved
to $SHOTS_DIR). Sequential by design: one thread drives every page, so each latency is one
member's own.
"""

from __future__ import annotations

import re
import statistics
import time
from collections import Counter

from app.classroom.store import ClassStore
from tests.e2e.classroom import (
    BACK,
    REFUSED,
    SMALL,
    TOKEN_STEP,
    main_block,
    new_page,
    on_step,
    progress,
    send_token,
    shot,
    shows,
    start_class,
    token_choices,
)
from tests.e2e.harness import PHONE, PROJECTOR, PageProblems, page_summary, wait_settled

UNANSWERED_MS = 15_000  # a Send that shows nothing this long: the student sends it again


def p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return (
        ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] if ordered else float("nan")
    )


def _pick_query(teacher, label: str) -> float:
    """Choose the query token `label` in the teacher's picker; the time of the click that
    chooses it (the teacher's action; typing its name to find it is not)."""
    box = teacher.locator(".st-key-lesson_query input")  # the box itself, not its label
    box.click()
    box.fill(label)  # filters the list: the option is drawn however long the list
    option = teacher.get_by_role("option", name=label, exact=True)
    try:
        option.wait_for()
        start = time.time()  # the clock the students' pages stamp with (Date.now())
        option.click()
    except Exception:
        shot(teacher, "B_class_bench_query_failed.png")
        raise
    return start


def run_class(browser, url, store: ClassStore, students: int, questions: int, outage=None) -> dict:
    """`url(**params)`: a page of the setup; `store`: the class store the setup uses; `outage`:
    (seconds, pause, resume) to take the store away during the middle question."""
    log = {"click_s": [], "tally_s": [], "step_s": [], "lost": 0, "duplicated": 0, "sent": 0,
           "expected": 0, "counted": 0, "refused": 0, "unanswered": [], "errors": []}  # fmt: skip
    teacher = new_page(browser, PROJECTOR)
    problems = [PageProblems(teacher)]  # console errors (e.g. a stale delta) and dialogs
    code = start_class(teacher, url(view="Lesson", lesson=TOKEN_STEP - 1, present=1, **SMALL))
    pages = []
    for _ in range(students):
        page = new_page(browser, PHONE)
        problems.append(PageProblems(page))
        page.goto(url(**{"class": code}))
        on_step(page, TOKEN_STEP - 1)
        pages.append(page)
    wait_settled(teacher)
    _watch(pages, progress(TOKEN_STEP))
    start = time.time()  # the clock the students' pages stamp with (Date.now())
    main_block(teacher).get_by_role("button", name="Next ▶").click()
    log["step_s"] += [shown - start for shown in _shown(pages)]
    header = main_block(teacher).get_by_text(re.compile(r"\(position \d+\) attend to most")).first
    rule = int(re.search(r"\(position (\d+)\)", header.inner_text())[1])
    labels: list[str] = []  # the tokens offered, read from a student's page once asked
    for question in range(questions):
        if question:  # a new query token: a new question, which the students follow
            teacher.get_by_role("button", name="Reveal to everyone").wait_for(state="detached")
            queries = [label for label in labels if int(label.split(":")[0]) != rule]
            query = queries[(question - 1) % len(queries)]
            _watch(pages, f"(position {query.split(':')[0]}) attend to most")
            start = _pick_query(teacher, query)
            log["step_s"] += [shown - start for shown in _shown(pages)]
        main_block(teacher).get_by_role("button", name="Ask the class").click()
        main_block(teacher).get_by_text("students answered").wait_for()
        if not labels:
            main_block(pages[0]).get_by_role("button", name="Send").wait_for()
            token_choices(pages[0]).first.wait_for()  # the pills may draw after the button
            labels = token_choices(pages[0]).all_inner_texts()
            assert labels, "the student's page offers no token to answer with"
        sent = {}
        away = outage is not None and question == questions // 2
        for number, page in enumerate(pages):
            label = labels[(number + question) % len(labels)]
            main_block(page).get_by_role("button", name="Send").wait_for()
            if away and number == len(pages) // 2:
                outage[1]()  # the store goes away for half the class
                taken = time.perf_counter()
            start = time.perf_counter()
            log["sent"] += 1
            counted = main_block(page).get_by_text(f"Counted: {label}")
            refused = main_block(page).get_by_text(REFUSED)
            name = f"q{question}_{number}"
            _send(page, label, counted.or_(refused), log, name, teacher, problems[number + 1])
            if counted.is_visible():
                log["click_s"].append(time.perf_counter() - start)
                sent[page] = label
                tally = re.compile(rf"^{len(sent)} of \d+ students answered$")
                main_block(teacher).get_by_text(tally).wait_for()
                log["tally_s"].append(time.perf_counter() - start)
            else:
                log["refused"] += 1
                sent[page] = None  # to send again once the store is back
        if away:
            time.sleep(max(0.0, outage[0] - (time.perf_counter() - taken)))
            outage[2]()
        for number, page in enumerate(pages):
            if sent[page] is None:  # refused with a message: the student sends it again
                label = labels[(number + question) % len(labels)]
                sent[page] = _send_again(page, label, log)
        main_block(teacher).get_by_text(
            re.compile(rf"^{len(pages)} of \d+ students answered$")
        ).wait_for()
        main_block(teacher).get_by_role("button", name="Reveal to everyone").click()
        for number, page in enumerate(pages):
            revealed = main_block(page).get_by_text("your guess:")
            shows(page, revealed, f"B_class_reveal_failed_{number}.png", problems[number + 1])
        state = store.state(code)
        tally = dict(store.tally(code, state.question).counts)
        expected = Counter(sent.values())
        log["counted"] += sum(tally.values())
        log["lost"] += sum(max(0, n - tally.get(a, 0)) for a, n in expected.items())
        log["duplicated"] += sum(max(0, n - expected.get(a, 0)) for a, n in tally.items())
        log["expected"] += len(sent)
    for page in (teacher, *pages):
        wait_settled(page)
        if page.get_by_test_id("stException").count():
            log["errors"].append("a traceback on a page")
        page.context.close()
    log["errors"] += [line for seen in problems for line in seen.errors + seen.dialogs]
    return log


SHOWN_JS = """(needle) => { window.shownAt = null; const timer = setInterval(() => {
  if (document.body.textContent.includes(needle)) {
    window.shownAt = Date.now() / 1000; clearInterval(timer); } }, 20); }"""


def _watch(pages, needle: str) -> None:
    """Each page stamps the moment it first shows `needle` (window.shownAt, seconds)."""
    for page in pages:
        page.evaluate(SHOWN_JS, needle)


def _shown(pages) -> list[float]:
    """When each page showed what _watch looks for (time.time()'s clock)."""
    for number, page in enumerate(pages):
        try:
            page.wait_for_function("window.shownAt !== null")
        except Exception as error:
            shot(page, f"B_class_step_failed_{number}.png", full_page=True)
            raise AssertionError(f"step not shown\n{page_summary(page)}") from error
    return [page.evaluate("window.shownAt") for page in pages]


def _send(page, label: str, answered, log: dict, name: str, teacher, problems) -> None:
    """Send `label` until the page shows `answered` (counted, or refused with a message), as a
    student would: a Send that shows nothing for UNANSWERED_MS is sent again (one answer per
    student: a second one replaces the first), and kept in log["unanswered"] with what the
    page showed, the websockets it opened (its PageProblems, `problems`) and the teacher's
    count then, its screenshot saved."""
    for attempt in range(3):
        send_token(page, label)
        try:
            failed = f"B_class_unanswered_{name}_{attempt}.png"
            shows(page, answered, failed, problems, UNANSWERED_MS)
            return
        except AssertionError as error:
            tally = main_block(teacher).get_by_text("students answered").all_inner_texts()
            shown = [*str(error).splitlines()[1:], f"teacher: {tally}"]
            log["unanswered"].append(f"{name}: {' · '.join(shown)}")
    raise AssertionError(f"{name}: a Send showed nothing 3 times\n{log['unanswered'][-1]}")


def _send_again(page, label: str, log: dict, tries: int = 5) -> str:
    """A refused answer sent again once the page has drawn itself again (the store is back),
    until it is counted; each further refusal is counted in log["refused"]."""
    for _ in range(tries):
        main_block(page).get_by_text(BACK).wait_for()
        send_token(page, label)
        counted = main_block(page).get_by_text(f"Counted: {label}")
        counted.or_(main_block(page).get_by_text(REFUSED)).wait_for()
        if counted.is_visible():
            return label
        log["refused"] += 1
    shot(page, "B_class_send_again_failed.png", full_page=True)
    raise AssertionError(f"an answer refused {tries} times after the store came back")


def row(setup: str, log: dict) -> str:
    click, cpu, wall = log["click_s"], log["server_cpu_s"], log["wall_s"]
    cells = [
        setup,
        f"{log['counted']} of {log['expected']}",
        str(log["lost"]),
        str(log["duplicated"]),
        str(log["refused"]),
        str(len(log["unanswered"])),
        f"{statistics.median(click):.2f} / {p(click, 0.95):.2f} s" if click else "-",
        f"{p(log['tally_s'], 0.95):.2f} s",
        f"{p(log['step_s'], 0.95):.2f} s",
        str(len(log["errors"])),
        f"{cpu:.1f} of {wall:.0f} s ({cpu / wall:.2f})",
    ]
    return "| " + " | ".join(cells) + " |"


HEADER = (
    "| setup | answers counted | lost | duplicated | refused with a message | a Send that showed "
    "nothing, sent again | a click answered "
    "(p50 / p95) | tally on the teacher's page (p95) | step change to every student (p95) | "
    "tracebacks and console errors | app servers' CPU of the class's wall time (cores busy) |"
    "\n|---|---|---|---|---|---|---|---|---|---|---|"
)
