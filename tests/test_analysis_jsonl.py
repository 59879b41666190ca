"""The fast JSON-lines field reader gives what json.loads gives, and survives cut files."""

import json

from critique.analysis.reading.jsonl import scan

FIELDS = ("stage", "strategy", "user", "completion_tokens", "correct", "score")


def by_field(rows, fields=FIELDS):
    return {f: [row[i] for row in rows] for i, f in enumerate(fields)}


def columns(path, fields=FIELDS, problems=None, exact=False, where=None):
    return by_field(scan(path, fields, problems, exact, where), fields)


def tricky_records():
    text = 'He said "stage": "test", \\"strategy\\": x\n{"user": 1}\t\u00e9\u4e2d\\'
    return [
        {"stage": "test", "strategy": "EP+SEM_CRIT", "user": None, "completion_tokens": 12, "correct": True,
         "score": 0.5, "messages": [{"role": "user", "content": text}], "response": text},
        {"stage": "train_predict", "strategy": None, "user": 'u "quoted" \\ one', "completion_tokens": None,
         "correct": False, "score": -1.5e-3, "messages": [{"role": "system", "content": "stage:"}],
         "response": '"completion_tokens": 99'},
        {"correct": None, "completion_tokens": 0, "score": 7, "stage": "test", "strategy": "zero_shot",
         "user": "\u00fcser", "retrieved": ["a", "b"], "response": "x" * 5000},
    ]


def write(path, records, sort_keys=True, ensure_ascii=False, tail=""):
    lines = [json.dumps(r, sort_keys=sort_keys, ensure_ascii=ensure_ascii) + "\n" for r in records]
    path.write_text("".join(lines) + tail, encoding="utf-8")
    return path


def expected(records, fields=FIELDS):
    return {f: [r.get(f) for r in records] for f in fields}


def test_fast_path_equals_json_loads_on_tricky_text(tmp_path):
    records = tricky_records() * 3
    for i, options in enumerate(({}, {"ensure_ascii": True}, {"sort_keys": False})):
        path = write(tmp_path / f"calls{i}.jsonl", records, **options)
        assert columns(path) == expected(records)
        assert columns(path, exact=True) == expected(records)


def test_compact_separators_are_read(tmp_path):
    path = tmp_path / "calls.jsonl"
    path.write_text("".join(json.dumps(r, separators=(",", ":")) + "\n" for r in tricky_records()))
    assert columns(path) == expected(tricky_records())


def test_missing_field_reads_as_none(tmp_path):
    records = tricky_records()
    del records[1]["score"]
    path = write(tmp_path / "calls.jsonl", records)
    assert columns(path)["score"] == [0.5, None, 7]


def test_cut_last_line_is_skipped_and_reported(tmp_path):
    records = tricky_records()
    whole = write(tmp_path / "whole.jsonl", records)
    cut = tmp_path / "cut.jsonl"
    cut.write_bytes(whole.read_bytes() + json.dumps(records[0]).encode()[:40])
    problems = []
    assert columns(cut, problems=problems) == expected(records)
    assert problems == [f"{cut}:4: unreadable line skipped (cut by a crash?)"]


def test_whole_last_line_without_newline_is_kept(tmp_path):
    records = tricky_records()
    path = write(tmp_path / "calls.jsonl", records[:2], tail=json.dumps(records[2]))
    problems = []
    assert columns(path, problems=problems) == expected(records)
    assert problems == []


def test_blank_and_broken_lines_in_the_middle(tmp_path):
    records = tricky_records()
    path = tmp_path / "calls.jsonl"
    path.write_text(json.dumps(records[0]) + "\n\n{broken\n" + json.dumps(records[1]) + "\n")
    problems = []
    assert columns(path, problems=problems) == expected(records[:2])
    assert problems == [f"{path}:3: unreadable line skipped (cut by a crash?)"]


def test_missing_and_empty_files(tmp_path):
    assert columns(tmp_path / "absent.jsonl") == {f: [] for f in FIELDS}
    (tmp_path / "empty.jsonl").write_text("")
    assert columns(tmp_path / "empty.jsonl") == {f: [] for f in FIELDS}


def test_a_nested_key_of_the_chosen_name_does_not_choose_a_record(tmp_path):
    records = tricky_records()
    records[0]["retrieved"] = [{"stage": "train_predict"}]  # the bytes a chosen line holds, one level down
    path = write(tmp_path / "calls.jsonl", records)
    where = ("stage", frozenset({"train_predict"}))
    assert columns(path, where=where) == expected([records[1]])
    assert columns(path, where=where) == columns(path, exact=True, where=where)


def test_a_last_field_that_few_or_no_records_have_reads_as_none(tmp_path):
    records = [{k: v for k, v in r.items() if k != "score"} for r in tricky_records()] * 2
    path = write(tmp_path / "none.jsonl", records)
    assert columns(path) == expected(records)  # no record has it
    records[-1]["score"] = 3
    path = write(tmp_path / "one.jsonl", records)
    assert columns(path) == expected(records)  # only the last one has it


def test_invalid_bytes_and_escapes_do_not_break_the_reader(tmp_path):
    path = tmp_path / "calls.jsonl"
    good = json.dumps({"stage": "test", "strategy": "zero_shot", "user": None, "completion_tokens": 1,
                       "correct": True, "score": 1})
    path.write_bytes(good.encode() + b"\n" + good.replace('"test"', '"t\\xst"').encode() + b"\n"
                     + good.encode().replace(b'"zero_shot"', b'"zero\xff"') + b"\n")
    problems = []
    got = columns(path, problems=problems)
    assert got["strategy"] == ["zero_shot", "zero\ufffd"]  # the line with a bad escape is not JSON
    assert problems == [f"{path}:2: unreadable line skipped (cut by a crash?)"]


def test_where_keeps_only_the_chosen_records(tmp_path):
    records = tricky_records() * 3
    chosen = [r for r in records if r["stage"] == "train_predict"]
    where = ("stage", frozenset({"train_predict"}))
    for i, options in enumerate(({"sort_keys": True}, {"ensure_ascii": True}, {}, {"separators": (",", ":")})):
        path = tmp_path / f"calls{i}.jsonl"
        path.write_text("".join(json.dumps(r, **options) + "\n" for r in records), encoding="utf-8")
        for exact in (False, True):
            got = columns(path, exact=exact, where=where)
            assert got == expected(chosen)
    path = write(tmp_path / "none.jsonl", records)
    assert columns(path, where=("stage", frozenset({"summary"}))) == {f: [] for f in FIELDS}


def test_where_reads_only_the_chosen_lines_and_still_reports_a_cut_one(tmp_path):
    records = tricky_records()
    where = ("stage", frozenset({"train_predict"}))
    path = tmp_path / "calls.jsonl"
    # a broken line of another stage is not read at all; the cut last line is reported
    path.write_text(json.dumps(records[1]) + "\n{broken\n" + json.dumps(records[0]) + "\n"
                    + json.dumps(records[1]) + "\n" + json.dumps(records[1])[:30])
    problems = []
    got = columns(path, problems=problems, where=where)
    assert got == expected([records[1], records[1]])
    assert problems == [f"{path}:5: unreadable line skipped (cut by a crash?)"]
    # a chosen line that is not as expected sends the whole file through json.loads, which reports it
    path.write_text(json.dumps(records[1]) + '\n{"stage": "train_predict", broken\n')
    problems = []
    got = columns(path, problems=problems, where=where)
    assert got == expected([records[1]])
    assert problems == [f"{path}:2: unreadable line skipped (cut by a crash?)"]
    # a whole last line without its newline is still chosen when it matches
    path.write_text(json.dumps(records[0]) + "\n" + json.dumps(records[1]))
    got = columns(path, where=where)
    assert got == expected([records[1]])


def test_short_records_are_parsed_at_once_unless_a_line_is_odd(tmp_path):
    from critique.analysis.reading.jsonl import _whole

    records = tricky_records() * 2
    data = write(tmp_path / "p.jsonl", records).read_bytes()
    assert by_field(_whole(data, len(data), FIELDS)) == expected(records)
    for odd in (b"\n\n", b"\n3\n", b'\n{"a": 1} {"b": 2}\n', b"\n[1, 2]\n"):
        bad = data.replace(b"\n", odd, 1)
        assert _whole(bad, len(bad), FIELDS) is None
