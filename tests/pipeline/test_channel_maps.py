"""Channel maps: the entry forms, the slot plans, the derived model inputs, and every shipped map
against the reference suite's (kkontras/NeuroAtlas) map for that dataset and model family."""

from __future__ import annotations

import numpy as np
import pytest
import yaml

from embedprobe.core.errors import UsageError
from embedprobe.datasets.bnci2014_001.reader import EEG_CHANNELS as BNCI_CHANNELS
from embedprobe.datasets.physionet_mi.reader import CHANNELS as PHYSIONET_CHANNELS
from embedprobe.datasets.siena.reader import ELECTRODES as SIENA_ELECTRODES
from embedprobe.datasets.sleep_edf.reader import EEG_CHANNELS as SLEEP_EDF_CHANNELS
from embedprobe.datasets.tuh import SCALP
from embedprobe.pipeline.channel_maps import (
    BIOT_SLOTS,
    CHANNEL_MAP_DIR,
    ChannelPlan,
    channel_plan,
    derive_inputs,
    input_positions,
    map_entries,
    mapped_channels,
)

DATASETS = ("sleep_edf_expanded", "chbmit", "siena", "tusz", "physionet_mi", "bnci2014_001")
FAMILIES = ("biot", "labram", "cbramod", "eegpt")


def shipped(dataset: str, family: str) -> ChannelPlan:
    return channel_plan({"datasets": {dataset: {}}}, dataset, family)


def inputs(plan: ChannelPlan) -> list[tuple]:
    """(model input name, source) in input order, filled inputs only: a source is
    ("direct", X), ("derived", A, B) for A - B, or ("approx", A)."""
    if not plan.derives:
        return direct(plan.recorded, plan.model_names)
    return [(plan.model_names[s.position],
             ("derived", s.plus, s.minus) if s.minus else (s.kind, s.plus))
            for s in plan.sources]


def direct(names, to=None) -> list[tuple]:
    """Recorded channels as is, under the names `to` (default their own)."""
    return [(out, ("direct", rec)) for rec, out in zip(names, to or names, strict=True)]


def pairs(names_and_electrodes, label) -> list[tuple]:
    """(model input name, A, B) -> A - B of the recorded channels label(A), label(B)."""
    return [(name, ("derived", label(a), label(b))) for name, a, b in names_and_electrodes]


def siena(electrode: str) -> str:
    return f"EEG {electrode}"


def physionet(electrode: str) -> str:
    """PhysioNet MI's label of a 10-10 electrode: its name padded with dots to 4 characters."""
    return electrode.ljust(4, ".")


# ------------------------------------------------ the reference's maps, written out by hand
# Sleep-EDF: configs/channel_maps/sleepedf.yaml (biot FP1-F3 / P3-O1, eegpt and labram FPZ/PZ,
# cbramod the two derivations passed through).
SLEEP_EDF = {
    "biot": [("FP1-F3", ("direct", "EEG Fpz-Cz")), ("P3-O1", ("direct", "EEG Pz-Oz"))],
    "labram": direct(SLEEP_EDF_CHANNELS, ["FPZ", "PZ"]),
    "eegpt": direct(SLEEP_EDF_CHANNELS, ["FPZ", "PZ"]),
    "cbramod": direct(SLEEP_EDF_CHANNELS),
}

# CHB-MIT: no reference map; its loader's 18 derivations (CHBMIT_BIPOLAR_18) through each
# wrapper's name rule. T8-P8 is MNE's T8-P8-0 here.
CHB_18 = ("FP1-F7", "F7-T7", "T7-P7", "P7-O1", "FP2-F8", "F8-T8", "T8-P8-0", "P8-O2",
          "FP1-F3", "F3-C3", "C3-P3", "P3-O1", "FP2-F4", "F4-C4", "C4-P4", "P4-O2",
          "FZ-CZ", "CZ-PZ")
CHBMIT = {
    # BIOT: every slot named by a recorded derivation is filled by it ("direct").
    "biot": direct(CHB_18[:16], BIOT_SLOTS),
    # LaBraM: only the names in its table (8 temporal-chain derivations) are kept.
    "labram": direct(CHB_18[:8], ["FP1-F7", "F7-T7", "T7-P7", "P7-O1",
                                  "FP2-F8", "F8-T8", "T8-P8", "P8-O2"]),
    # EEGPT: the wrapper's _BIPOLAR_TO_STANDARD table.
    "eegpt": direct(CHB_18, ["F7", "T7", "P7", "O1", "F8", "T8", "P8", "O2",
                             "FP1", "F3", "C3", "P3", "FP2", "F4", "C4", "P4", "FZ", "PZ"]),
    "cbramod": direct(CHB_18),
}

# Siena: configs/channel_maps/siena.yaml's 20-pair montage (channels_used; cbramod passes it
# through), derived from the recorded electrodes; BIOT's slot rule with T3-T6 as T7, T8, P7, P8.
SIENA_20 = [("FP1-F7", "Fp1", "F7"), ("F7-T3", "F7", "T3"), ("T3-T5", "T3", "T5"),
            ("T5-O1", "T5", "O1"), ("FP2-F8", "Fp2", "F8"), ("F8-T4", "F8", "T4"),
            ("T4-T6", "T4", "T6"), ("T6-O2", "T6", "O2"), ("T3-C3", "T3", "C3"),
            ("C3-CZ", "C3", "Cz"), ("CZ-C4", "Cz", "C4"), ("C4-T4", "C4", "T4"),
            ("FP1-F3", "Fp1", "F3"), ("F3-C3", "F3", "C3"), ("C3-P3", "C3", "P3"),
            ("P3-O1", "P3", "O1"), ("FP2-F4", "Fp2", "F4"), ("F4-C4", "F4", "C4"),
            ("C4-P4", "C4", "P4"), ("P4-O2", "P4", "O2")]
EEGPT_NAMES_OF_SIENA_20 = ["F7", "T7", "P7", "O1", "F8", "T8", "P8", "O2", "FC3", "FCZ", "FC4",
                           "CP4", "FP1", "F3", "C3", "P3", "FP2", "F4", "C4", "P4"]
SIENA_BIOT = [("FP1-F7", "Fp1", "F7"), ("F7-T7", "F7", "T3"), ("T7-P7", "T3", "T5"),
              ("P7-O1", "T5", "O1"), ("FP2-F8", "Fp2", "F8"), ("F8-T8", "F8", "T4"),
              ("T8-P8", "T4", "T6"), ("P8-O2", "T6", "O2"), ("FP1-F3", "Fp1", "F3"),
              ("F3-C3", "F3", "C3"), ("C3-P3", "C3", "P3"), ("P3-O1", "P3", "O1"),
              ("FP2-F4", "Fp2", "F4"), ("F4-C4", "F4", "C4"), ("C4-P4", "C4", "P4"),
              ("P4-O2", "P4", "O2")]
SIENA = {
    "biot": pairs(SIENA_BIOT, siena),
    "labram": pairs(SIENA_BIOT[:8], siena),  # the 8 pairs LaBraM's table names
    "eegpt": pairs([(name, a, b) for name, (_, a, b)
                    in zip(EEGPT_NAMES_OF_SIENA_20, SIENA_20, strict=True)], siena),
    "cbramod": pairs(SIENA_20, siena),
}

# TUSZ: its loader's default montage (cohort tusz, montage: bipolar) is readers.BIPOLAR_MONTAGE,
# Siena's 20 pairs by name and order; it ships no map, so each wrapper sees what it sees on
# Siena. The electrodes as the TUSZ reader names them (FP1, ..., CZ: datasets/tuh.py).
TUSZ = {family: [(name, (src[0], *(e.upper() for e in (x.removeprefix("EEG ") for x in src[1:]))))
                 for name, src in plans] for family, plans in SIENA.items()}
TUSZ_BIPOLAR_MONTAGE = ["FP1-F7", "F7-T3", "T3-T5", "T5-O1", "FP2-F8", "F8-T4", "T4-T6", "T6-O2",
                        "T3-C3", "C3-CZ", "CZ-C4", "C4-T4", "FP1-F3", "F3-C3", "C3-P3", "P3-O1",
                        "FP2-F4", "F4-C4", "C4-P4", "P4-O2"]

# PhysioNet MI: no reference map; MOABB's 64 channels (the reference's CHANNELS_PHYSIONET_MI,
# in this order) through each wrapper. BIOT derives all 16 pairs (the same pairs as Siena's,
# in modern names).
MOABB_64 = ["FC5", "FC3", "FC1", "FCz", "FC2", "FC4", "FC6", "C5", "C3", "C1", "Cz", "C2", "C4",
            "C6", "CP5", "CP3", "CP1", "CPz", "CP2", "CP4", "CP6", "Fp1", "Fpz", "Fp2", "AF7",
            "AF3", "AFz", "AF4", "AF8", "F7", "F5", "F3", "F1", "Fz", "F2", "F4", "F6", "F8",
            "FT7", "FT8", "T7", "T8", "T9", "T10", "TP7", "TP8", "P7", "P5", "P3", "P1", "Pz",
            "P2", "P4", "P6", "P8", "PO7", "PO3", "POz", "PO4", "PO8", "O1", "Oz", "O2", "Iz"]
MODERN = {"T3": "T7", "T5": "P7", "T4": "T8", "T6": "P8"}
BIOT_PAIRS = [(slot, MODERN.get(a, a), MODERN.get(b, b)) for slot, a, b in SIENA_BIOT]
NOT_IN_EEGPT = {"AFz", "T9", "T10", "Iz"}
PHYSIONET = {
    "biot": pairs(BIOT_PAIRS, lambda e: physionet(e.capitalize())),
    "labram": direct([physionet(e.capitalize()) for e in MOABB_64], [e.upper() for e in MOABB_64]),
    "eegpt": direct([physionet(e.capitalize()) for e in MOABB_64 if e not in NOT_IN_EEGPT],
                    [e.upper() for e in MOABB_64 if e not in NOT_IN_EEGPT]),
    "cbramod": direct([physionet(e.capitalize()) for e in MOABB_64]),
}

# BNCI 2014-001: no reference map; MOABB's 22 channels through each wrapper. BIOT: no slot's pair
# is recorded; one electrode of the pair stands in where there is one (C3, C4).
MOABB_22 = ["Fz", "FC3", "FC1", "FCz", "FC2", "FC4", "C5", "C3", "C1", "Cz", "C2", "C4", "C6",
            "CP3", "CP1", "CPz", "CP2", "CP4", "P1", "Pz", "P2", "POz"]
BNCI = {
    "biot": [("F3-C3", ("approx", "C3")), ("C3-P3", ("approx", "C3")),
             ("F4-C4", ("approx", "C4")), ("C4-P4", ("approx", "C4"))],
    "labram": direct(MOABB_22, [e.upper() for e in MOABB_22]),
    "eegpt": direct(MOABB_22, [e.upper() for e in MOABB_22]),
    "cbramod": direct(MOABB_22),
}

REFERENCE = {"sleep_edf_expanded": SLEEP_EDF, "chbmit": CHBMIT, "siena": SIENA, "tusz": TUSZ,
             "physionet_mi": PHYSIONET, "bnci2014_001": BNCI}


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("dataset", DATASETS)
def test_each_shipped_map_is_the_references(dataset, family):
    assert inputs(shipped(dataset, family)) == REFERENCE[dataset][family]


def biot_rule(names: list[str]) -> list[tuple]:
    """The reference's BIOT wrapper rule, restated: a slot takes the recorded channel of its
    name, else A - B of its electrodes (T3-T6 counting as T7, T8, P7, P8), else one of them."""
    found = {}
    for name in names:
        found.setdefault(name.upper(), name)
        if name.upper() in MODERN:
            found.setdefault(MODERN[name.upper()], name)
    out = []
    for slot in BIOT_SLOTS:
        a, b = (found.get(e) for e in slot.split("-"))
        if slot in found:
            out.append((slot, ("direct", found[slot])))
        elif a and b:
            out.append((slot, ("derived", a, b)))
        elif a or b:
            out.append((slot, ("approx", a or b)))
    return out


UNLABEL = {"chbmit": lambda x: x.removesuffix("-0"), "siena": lambda x: x.removeprefix("EEG "),
           "physionet_mi": lambda x: x.strip("."), "bnci2014_001": lambda x: x}


@pytest.mark.parametrize("dataset, names", [
    ("chbmit", CHB_18),
    ("siena", [siena(e) for e in SIENA_ELECTRODES]),
    ("physionet_mi", PHYSIONET_CHANNELS),
    ("bnci2014_001", BNCI_CHANNELS),
])
def test_the_written_out_biot_maps_follow_the_references_slot_rule(dataset, names):
    """A check on the literals above: the rule over the dataset's channels (their electrode
    names) fills the same slots from the same electrodes."""
    unlabel = UNLABEL[dataset]

    def upper(slots):
        return [(slot, (src[0], *(unlabel(x).upper() for x in src[1:]))) for slot, src in slots]

    assert upper(biot_rule([unlabel(n) for n in names])) == upper(REFERENCE[dataset]["biot"])


def test_tusz_hands_the_by_order_families_the_references_20_pairs_in_its_order():
    """readers.BIPOLAR_MONTAGE, each pair A - B of the TUSZ reader's electrodes, in its order,
    to every family that reads channels by order; the unipolar map is the option."""
    for family in ("cbramod", "bendr", "codebrain", "chronos", "moment"):
        plan = shipped("tusz", family)
        assert list(plan.model_names) == TUSZ_BIPOLAR_MONTAGE, family
        assert [f"{s.plus}-{s.minus}" for s in plan.sources] == TUSZ_BIPOLAR_MONTAGE, family
        assert set(plan.recorded) <= set(SCALP)
    unipolar = channel_plan({"datasets": {"tusz": {"channel_map": "tusz_unipolar"}}}, "tusz",
                            "cbramod")
    assert unipolar.recorded == ("FP1", "FP2", "F3", "F4", "F7", "F8", "C3", "C4", "CZ", "FZ",
                                 "P3", "P4", "PZ", "T3", "T4", "T5", "T6", "O1", "O2")
    assert not unipolar.derives


def like_map(tmp_path, electrodes: dict, like: str = "siena") -> None:
    """x.yaml in tmp_path: `like` (a copy of the shipped map of that name) renamed."""
    shipped_map = CHANNEL_MAP_DIR / f"{like}.yaml"
    if shipped_map.is_file():
        (tmp_path / shipped_map.name).write_text(shipped_map.read_text())
    (tmp_path / "x.yaml").write_text(yaml.safe_dump({"like": like, "electrodes": electrodes}))


def test_a_like_map_is_the_other_maps_entries_renamed(tmp_path):
    like_map(tmp_path, {siena(e): e.upper() for e in SIENA_ELECTRODES})
    assert set(map_entries(tmp_path / "x.yaml")) == set(map_entries(tmp_path / "siena.yaml"))
    for family in FAMILIES:
        plan = channel_plan({"datasets": {"x": {}}}, "x", family, map_dir=tmp_path)
        assert inputs(plan) == TUSZ[family]
    # the data scan reads the same electrodes, renamed, in the same order
    assert mapped_channels({"datasets": {"x": {}}}, "x", map_dir=tmp_path) == tuple(
        c.removeprefix("EEG ").upper() for c in mapped_channels({"datasets": {"siena": {}}},
                                                                "siena"))


def test_a_like_map_that_leaves_a_channel_unnamed_is_refused(tmp_path):
    like_map(tmp_path, {siena(e): e.upper() for e in SIENA_ELECTRODES if e != "Cz"})
    with pytest.raises(UsageError, match="does not rename EEG Cz, which siena.yaml reads"):
        channel_plan({"datasets": {"x": {}}}, "x", "cbramod", map_dir=tmp_path)


def test_a_like_map_of_a_like_map_or_of_nothing_is_refused(tmp_path):
    like_map(tmp_path, {"a": "b"}, like="nowhere")
    with pytest.raises(UsageError, match="like: nowhere needs an existing map"):
        channel_plan({"datasets": {"x": {}}}, "x", "cbramod", map_dir=tmp_path)
    (tmp_path / "y.yaml").write_text(yaml.safe_dump({"like": "x", "electrodes": {}}))
    with pytest.raises(UsageError, match="that is not a like: map itself"):
        channel_plan({"datasets": {"y": {}}}, "y", "cbramod", map_dir=tmp_path)


def test_a_like_map_with_an_entry_of_its_own_is_refused(tmp_path):
    like_map(tmp_path, {siena(e): e.upper() for e in SIENA_ELECTRODES})
    text = (tmp_path / "x.yaml").read_text()
    (tmp_path / "x.yaml").write_text(text + "cbramod: {skip: mine}\n")
    with pytest.raises(UsageError, match="nothing else"):
        channel_plan({"datasets": {"x": {}}}, "x", "cbramod", map_dir=tmp_path)


def test_the_recorded_channels_exist_in_the_readers():
    recorded = {
        "siena": {siena(e) for e in SIENA_ELECTRODES},
        "physionet_mi": set(PHYSIONET_CHANNELS),
        "bnci2014_001": set(BNCI_CHANNELS),
        "sleep_edf_expanded": set(SLEEP_EDF_CHANNELS),
    }
    for dataset, channels in recorded.items():
        for family in FAMILIES:
            assert set(shipped(dataset, family).recorded) <= channels, (dataset, family)


def test_biot_slots_are_the_checkpoints_first_16_channel_tokens():
    from braindecode.models.biot import BIOT_CHANNEL_ORDER

    assert BIOT_SLOTS == tuple(BIOT_CHANNEL_ORDER[:16])


def test_model_names_are_in_the_models_tables_and_unique():
    from braindecode.models.eegpt import CHANNEL_DICT
    from braindecode.models.labram import LABRAM_CHANNEL_ORDER

    tables = {"labram": {n.upper() for n in LABRAM_CHANNEL_ORDER}, "eegpt": set(CHANNEL_DICT)}
    for dataset in DATASETS:
        for family, table in tables.items():
            names = shipped(dataset, family).model_names
            assert len(set(names)) == len(names) and set(names) <= table, (dataset, family)


# ------------------------------------------------------------------ slot plans and their inputs


def test_a_slot_plan_has_every_slot_as_a_model_input():
    plan = shipped("sleep_edf_expanded", "biot")
    assert plan.state == "slots"
    assert plan.model_names == BIOT_SLOTS and len(plan.model_names) == 16
    assert plan.recorded == ("EEG Fpz-Cz", "EEG Pz-Oz")
    assert input_positions(plan).tolist() == [8, 11]  # FP1-F3, P3-O1
    assert plan.summary == "slots: 2 of 16 inputs filled (2 direct), 14 zero"
    assert "very poor coverage" in plan.note


def write_map(tmp_path, entries) -> dict:
    (tmp_path / "toy.yaml").write_text(yaml.safe_dump(entries, sort_keys=False))
    return {"datasets": {"toy": {}}}


def test_derive_inputs_makes_each_slot_and_the_rest_stays_zero(tmp_path):
    config = write_map(tmp_path, {"biot": {"slots": {
        "P4-O2": ["b", "a"], "FP1-F7": ["a", "b"], "F7-T7": "c", "T7-P7": {"approx": "a"}}}})
    plan = channel_plan(config, "toy", "biot", tmp_path)
    assert plan.recorded == ("a", "b", "c")  # each once, in the order the slots first use them
    data = np.array([[1, 2, 3], [10, 20, 30], [5, 6, 7]], np.float32)
    rows = derive_inputs(plan, data)
    np.testing.assert_array_equal(rows, [[-9, -18, -27],  # FP1-F7 = a - b
                                         [5, 6, 7],  # F7-T7 = c
                                         [1, 2, 3],  # T7-P7 ~ a
                                         [9, 18, 27]])  # P4-O2 = b - a
    assert rows.dtype == np.float32
    np.testing.assert_array_equal(data[0], [1, 2, 3])  # the recorded rows are left as they were
    assert input_positions(plan).tolist() == [0, 1, 2, 15]
    # As the window maker lays them out: 16 inputs, 12 of them zero.
    windows = np.zeros((2, len(plan.model_names), 3), np.float32)
    windows[:, input_positions(plan)] = derive_inputs(plan, np.stack([data, 2 * data]))
    np.testing.assert_array_equal(windows[1, 15], [18, 36, 54])
    assert int((np.abs(windows).sum(axis=(0, 2)) == 0).sum()) == 12


def test_one_electrode_can_stand_in_for_two_slots():
    plan = shipped("bnci2014_001", "biot")
    assert plan.recorded == ("C3", "C4")
    rows = derive_inputs(plan, np.array([[1.0, -1.0], [4.0, 2.0]], np.float32))
    np.testing.assert_array_equal(rows, [[1, -1], [1, -1], [4, 2], [4, 2]])
    assert input_positions(plan).tolist() == [9, 10, 13, 14]  # F3-C3, C3-P3, F4-C4, C4-P4
    assert plan.summary == "slots: 4 of 16 inputs filled (4 approx), 12 zero"


def test_a_derived_plan_has_exactly_its_inputs(tmp_path):
    config = write_map(tmp_path, {"eegpt": {"derive": {"T7": ["F7", "T3"], "C3": "C3"}}})
    plan = channel_plan(config, "toy", "eegpt", tmp_path)
    assert (plan.state, plan.model_names, plan.recorded) == ("derived", ("T7", "C3"),
                                                             ("F7", "T3", "C3"))
    rows = derive_inputs(plan, np.array([[3.0], [1.0], [7.0]], np.float32))
    np.testing.assert_array_equal(rows, [[2.0], [7.0]])
    assert input_positions(plan).tolist() == [0, 1]


def test_plans_that_derive_nothing_hand_the_data_back():
    plan = shipped("physionet_mi", "eegpt")
    data = np.ones((len(plan.recorded), 4), np.float32)
    assert derive_inputs(plan, data) is data
    assert input_positions(plan).tolist() == list(range(60))


def test_derive_inputs_refuses_rows_that_do_not_fit():
    with pytest.raises(ValueError, match="3 recorded rows for the plan's 2"):
        derive_inputs(shipped("sleep_edf_expanded", "biot"), np.zeros((3, 5), np.float32))


def test_the_data_scan_reads_every_electrode_a_derivation_uses():
    # the electrodes of the reference's 20 bipolar pairs, and Fz and Pz, which EEG-DINO reads
    # as recorded (its 19 10-20 electrodes)
    channels = mapped_channels({"datasets": {"siena": {}}}, "siena")
    assert set(channels) == {siena(e) for e in ("Fp1", "F7", "T3", "T5", "O1", "Fp2", "F8", "T4",
                                                "T6", "O2", "F3", "C3", "P3", "F4", "C4", "P4",
                                                "Cz", "Fz", "Pz")}


# -------------------------------------------------------------------------------- refusals


def test_an_unknown_slot_is_refused_with_the_slot_names(tmp_path):
    config = write_map(tmp_path, {"biot": {"slots": {"FP1-T3": ["Fp1", "T3"]}}})
    with pytest.raises(UsageError, match="has no slot FP1-T3") as err:
        channel_plan(config, "toy", "biot", tmp_path)
    assert str(tmp_path / "toy.yaml") in str(err.value)
    assert err.value.fix == "use biot's slot names: " + ", ".join(BIOT_SLOTS)


@pytest.mark.parametrize("source", [["a"], ["a", "a"], {"approx": ["a"]}, 3, {"nearest": "a"}])
def test_a_source_of_no_known_form_is_refused(tmp_path, source):
    config = write_map(tmp_path, {"biot": {"slots": {"C3-P3": source}}})
    with pytest.raises(UsageError, match="input C3-P3: .* is not a source") as err:
        channel_plan(config, "toy", "biot", tmp_path)
    assert "{approx:" in err.value.fix


def test_a_slot_family_refuses_positional_forms_and_others_refuse_slots(tmp_path):
    config = write_map(tmp_path, {"biot": {"labels_as_recorded": ["a"]},
                                  "labram": {"slots": {"FP1-F7": "a"}}})
    with pytest.raises(UsageError, match="'biot' reads channels by slot") as err:
        channel_plan(config, "toy", "biot", tmp_path)
    assert err.value.fix.startswith("use slots: {slot: source} with biot's slots (FP1-F7,")
    with pytest.raises(UsageError, match="'labram' reads channels by name or order"):
        channel_plan(config, "toy", "labram", tmp_path)


def test_a_missing_entry_names_the_forms_that_fit_the_family(tmp_path):
    config = write_map(tmp_path, {"cbramod": {"skip": "x"}})
    with pytest.raises(UsageError) as err:
        channel_plan(config, "toy", "biot", tmp_path)
    assert err.value.fix == "add 'biot:' with slots or skip (and its reason)"
    with pytest.raises(UsageError) as err:
        channel_plan(config, "toy", "eegpt", tmp_path)
    assert err.value.fix == ("add 'eegpt:' with rename, labels_as_recorded, derive or skip "
                             "(and its reason)")


def test_two_forms_in_one_entry_are_refused(tmp_path):
    config = write_map(tmp_path, {"labram": {"rename": {"a": "FZ"}, "skip": "x"}})
    with pytest.raises(UsageError, match="needs exactly one of rename, labels_as_recorded, "
                                         "slots, derive, skip"):
        channel_plan(config, "toy", "labram", tmp_path)
