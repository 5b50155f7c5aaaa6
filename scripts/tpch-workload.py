#!/usr/bin/env python3
"""Skewed train/test query workloads on TPC-H `lineitem`, from the lineitem predicates of
TPC-H Q1, Q3, Q6, Q7, Q10, Q12, Q14, Q15, Q19 and Q20.

    scripts/tpch-workload.py [--seed S=42] [--runs N=2000]
                             [--train FILE=tpch-train.workload] [--test FILE=tpch-test.workload]
    scripts/tpch-workload.py --check

Each file holds N query executions: per execution a template is drawn by the fixed shares
in TEMPLATES, then its substitution parameters as the TPC-H specification (v3.0, clause
2.4.<query>.3 "Substitution Parameters"; ship modes from clause 4.2.2.13) draws them:
uniformly within the stated ranges. Identical predicates are merged, so a line's weight is
the number of times its exact predicate was drawn. Train uses `random.Random("train:S")`, test
an independent `random.Random("test:S")`, so a layout chosen on train is scored on unseen queries.

File format (the project's workload format): UTF-8, one predicate per line, optionally
`WEIGHT<TAB>PREDICATE` with WEIGHT a positive integer (the number of runs; no tab: 1);
blank lines and lines starting with `#` are comments. Predicates are in the `--where`
language: `column op literal`, IN, IS [NOT] NULL, [NOT] BETWEEN, AND/OR/NOT, parentheses;
literals are numbers, 'strings', DATE 'yyyy-mm-dd', TRUE/FALSE/NULL. There is no date
arithmetic (dates are computed here) and no column-to-column comparison, so those conjuncts
(Q12's l_commitdate < l_receiptdate, l_shipdate < l_commitdate) and every conjunct on
another table (orders, part, customer, ...) are left out. Lines are sorted by weight
descending, then text; output is deterministic for a seed. Standard library only.

`--check` generates both workloads in memory and asserts that every line parses back
(weight, TAB, a predicate of the language), the weights sum to N, every DATE literal is a
valid date, and Q1's dates lie in [1998-08-03, 1998-10-02]; prints "ok".
"""
import argparse
import datetime
import random
import re
import sys
from collections import Counter

MODES = ["REG AIR", "AIR", "RAIL", "SHIP", "TRUCK", "MAIL", "FOB"]  # clause 4.2.2.13


def add_months(day, months):
    index = day.year * 12 + day.month - 1 + months
    return day.replace(year=index // 12, month=index % 12 + 1)


def date(day):
    return f"DATE '{day.isoformat()}'"


def year_start(rng):
    return datetime.date(rng.randint(1993, 1997), 1, 1)


def shipdate_range(start, end):
    return f"l_shipdate >= {date(start)} AND l_shipdate < {date(end)}"


def q1(rng):  # 2.4.1.3: DELTA within [60 .. 120]
    delta = datetime.timedelta(days=rng.randint(60, 120))
    return f"l_shipdate <= {date(datetime.date(1998, 12, 1) - delta)}"


def q3(rng):  # 2.4.3.3: DATE a day within [1995-03-01 .. 1995-03-31]; SEGMENT is on customer
    return f"l_shipdate > {date(datetime.date(1995, 3, rng.randint(1, 31)))}"


def q6(rng):  # 2.4.6.3: DATE Jan 1 of [1993 .. 1997], DISCOUNT [0.02 .. 0.09], QUANTITY [24 .. 25]
    start, cents, quantity = year_start(rng), rng.randint(2, 9), rng.randint(24, 25)
    return (f"{shipdate_range(start, add_months(start, 12))} AND l_discount BETWEEN "
            f"{(cents - 1) / 100:.2f} AND {(cents + 1) / 100:.2f} AND l_quantity < {quantity}")


def q7(rng):  # 2.4.7.3: only NATION1/NATION2 (on nation); the date range is fixed
    return "l_shipdate BETWEEN DATE '1995-01-01' AND DATE '1996-12-31'"


def q10(rng):  # 2.4.10.3: its DATE filters o_orderdate; on lineitem only the return flag
    return "l_returnflag = 'R'"


def q12(rng):  # 2.4.12.3: two distinct SHIPMODEs (4.2.2.13), DATE Jan 1 of [1993 .. 1997]
    # Dropped: l_commitdate < l_receiptdate AND l_shipdate < l_commitdate (two columns).
    # The pair is sorted so that the same two modes drawn in either order merge.
    first, second = sorted(rng.sample(MODES, 2))
    start = year_start(rng)
    return (f"l_shipmode IN ('{first}', '{second}') AND l_receiptdate >= {date(start)} "
            f"AND l_receiptdate < {date(add_months(start, 12))}")


def q14(rng):  # 2.4.14.3: first day of a month of a random year in [1993 .. 1997] (60 months)
    start = datetime.date(rng.randint(1993, 1997), rng.randint(1, 12), 1)
    return shipdate_range(start, add_months(start, 1))


def q15(rng):  # 2.4.15.3: first day of a month from 1993-01 to 1997-10 (58 months)
    start = add_months(datetime.date(1993, 1, 1), rng.randint(0, 57))
    return shipdate_range(start, add_months(start, 3))


def q19(rng):  # 2.4.19.3: QUANTITY1 [1 .. 10], QUANTITY2 [10 .. 20], QUANTITY3 [20 .. 30]
    # The spec repeats the ship mode and instruction conjuncts in each of the three
    # disjuncts (with the part conditions); they are factored out here, which is
    # equivalent. `l_quantity >= q AND l_quantity <= q + 10` is written as BETWEEN. The
    # spec's query text says 'AIR REG' although dbgen writes 'REG AIR' (4.2.2.13): kept
    # verbatim, so in practice only 'AIR' matches.
    ranges = " OR ".join(f"l_quantity BETWEEN {q} AND {q + 10}"
                         for q in (rng.randint(1, 10), rng.randint(10, 20), rng.randint(20, 30)))
    return (f"l_shipmode IN ('AIR', 'AIR REG') AND l_shipinstruct = 'DELIVER IN PERSON' "
            f"AND ({ranges})")


def q20(rng):  # 2.4.20.3: DATE Jan 1 of [1993 .. 1997]; COLOR, NATION are on part, nation
    start = year_start(rng)
    return shipdate_range(start, add_months(start, 12))


# Fixed, skewed template shares in percent (sum 100): roughly Zipf-like by rank.
TEMPLATES = [("Q6", 30, q6), ("Q1", 15, q1), ("Q14", 12, q14), ("Q19", 10, q19),
             ("Q12", 8, q12), ("Q3", 7, q3), ("Q15", 6, q15), ("Q20", 5, q20),
             ("Q7", 4, q7), ("Q10", 3, q10)]


def draw(seed, runs):
    """Counter of (template, predicate) -> times drawn."""
    rng = random.Random(seed)
    names = [name for name, _, _ in TEMPLATES]
    shares = [share for _, share, _ in TEMPLATES]
    makers = {name: make for name, _, make in TEMPLATES}
    drawn = Counter()
    for name in rng.choices(names, weights=shares, k=runs):
        drawn[(name, makers[name](rng))] += 1
    return drawn


def render(drawn, kind, seed, runs):
    weights = Counter()
    for (_, predicate), count in drawn.items():
        weights[predicate] += count
    shares = ", ".join(f"{name} {share}%" for name, share, _ in TEMPLATES)
    lines = [f"# TPC-H lineitem {kind} workload: scripts/tpch-workload.py, seed {seed}, "
             f"{runs} runs, {len(weights)} distinct predicates",
             f"# template shares: {shares}",
             "# parameters as TPC-H v3 clause 2.4.x.3; format: WEIGHT<TAB>PREDICATE"]
    for predicate, weight in sorted(weights.items(), key=lambda item: (-item[1], item[0])):
        lines.append(f"{weight}\t{predicate}")
    return "\n".join(lines) + "\n"


TOKEN = re.compile(r"\s*(?:(\d+(?:\.\d+)?)|('(?:[^']|'')*')|([A-Za-z_]\w*)"
                   r"|(<=|>=|<>|!=|[=<>(),]))")
KEYWORDS = {"AND", "OR", "NOT", "IN", "IS", "NULL", "BETWEEN", "DATE", "TRUE", "FALSE"}


class Parser:
    """Recursive descent over the `--where` language; fails on anything else."""

    def __init__(self, text):
        self.tokens, position = [], 0
        while position < len(text.rstrip()):
            match = TOKEN.match(text, position)
            assert match, f"bad token at {text[position:]!r}"
            number, string, word, symbol = match.groups()
            self.tokens.append(("num", number) if number else ("str", string) if string else
                               ("kw", word.upper()) if word and word.upper() in KEYWORDS else
                               ("col", word) if word else ("sym", symbol))
            position = match.end()
        self.at, self.dates, self.comparisons = 0, [], []

    def peek(self, *wanted):
        return self.at < len(self.tokens) and self.tokens[self.at][1] in wanted

    def take(self, kind=None, *wanted):
        assert self.at < len(self.tokens), "unexpected end"
        token = self.tokens[self.at]
        assert (kind is None or token[0] == kind) and (not wanted or token[1] in wanted), token
        self.at += 1
        return token[1]

    def parse(self):
        self.expression()
        assert self.at == len(self.tokens), f"trailing {self.tokens[self.at:]}"
        return self

    def expression(self, operators=("OR", "AND")):  # OR binds looser than AND
        self.expression(operators[1:]) if operators[1:] else self.factor()
        while self.peek(operators[0]):
            self.take("kw")
            self.expression(operators[1:]) if operators[1:] else self.factor()

    def factor(self):
        if self.peek("NOT"):
            self.take(), self.factor()
        elif self.peek("("):
            self.take(), self.expression(), self.take("sym", ")")
        else:
            self.comparison()

    def literal(self):
        kind, value = self.tokens[self.at] if self.at < len(self.tokens) else (None, None)
        if kind == "kw" and value == "DATE":
            self.take()
            text = self.take("str")[1:-1]
            try:
                assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", text)
                self.dates.append(datetime.date.fromisoformat(text))
            except (AssertionError, ValueError):
                raise AssertionError(f"bad date {text!r}") from None
        else:  # a column or anything else here is a column comparison or arithmetic
            assert kind in ("num", "str") or value in ("TRUE", "FALSE", "NULL"), (kind, value)
            self.take()

    def comparison(self):
        column = self.take("col")
        assert column.startswith("l_"), f"not a lineitem column: {column}"
        if self.peek("IS"):
            self.take(), self.peek("NOT") and self.take(), self.take("kw", "NULL")
            return
        negated = self.peek("NOT") and self.take()
        if self.peek("IN"):
            self.take(), self.take("sym", "("), self.literal()
            while self.peek(","):
                self.take(), self.literal()
            self.take("sym", ")")
        elif self.peek("BETWEEN"):
            self.take(), self.literal(), self.take("kw", "AND"), self.literal()
        else:
            assert not negated, "NOT before a comparison operator"
            operator = self.take("sym", "=", "!=", "<>", "<", "<=", ">", ">=")
            self.comparisons.append((column, operator))
            self.literal()


def check(seed, runs):
    for kind, file_seed in (("train", f"train:{seed}"), ("test", f"test:{seed}")):
        drawn = draw(file_seed, runs)
        total = 0
        for line in render(drawn, kind, file_seed, runs).splitlines():
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            weight, tab, predicate = line.partition("\t")
            assert tab and re.fullmatch(r"[1-9]\d*", weight), line
            assert "INTERVAL" not in predicate.upper() and "+" not in predicate, line
            Parser(predicate).parse()
            total += int(weight)
        assert total == runs, (kind, total, runs)
        for (name, predicate), _ in drawn.items():
            if name == "Q1":
                parsed = Parser(predicate).parse()
                assert parsed.comparisons == [("l_shipdate", "<=")], predicate
                assert all(datetime.date(1998, 8, 3) <= day <= datetime.date(1998, 10, 2)
                           for day in parsed.dates), predicate
    assert runs < 100 or draw(f"train:{seed}", runs) != draw(f"test:{seed}", runs), "train equals test"
    print("ok")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--train", default="tpch-train.workload")
    parser.add_argument("--test", default="tpch-test.workload")
    parser.add_argument("--check", action="store_true", help="self-check in memory; print ok")
    args = parser.parse_args()
    if args.runs < 1:
        sys.exit("--runs must be positive")
    if args.check:
        check(args.seed, args.runs)
        return
    files = (("train", args.train, f"train:{args.seed}"), ("test", args.test, f"test:{args.seed}"))
    for kind, path, file_seed in files:
        text = render(draw(file_seed, args.runs), kind, file_seed, args.runs)
        with open(path, "w", encoding="utf-8") as out:
            out.write(text)
        print(f"{path}: {text.count(chr(9))} distinct predicates, {args.runs} runs")


if __name__ == "__main__":
    main()
