"""Long conversations with planted facts, generated (no download): the data of
``bench_long_conversations.py``.

Run from the repository root to write one as JSON Lines (one user message a line, with what it
plants, corrects or asks)::

    .venv/bin/python benchmarks/long_conversation_data.py --turns 1000 --out conversation.jsonl

A conversation of N turns plants facts (a code, a name or a preference, each under its own
key: "the door code of my garage", "the name of my dentist", "my favourite tea"), corrects
some of them later, fills the rest with small talk, and asks about each planted fact long
after it was given (at least a fifth of the conversation later). The same ``seed`` always
gives the same conversation.
"""

from __future__ import annotations

import argparse
import json
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PLACES = [
    "garage", "office", "gym locker", "storage unit", "bike lock", "safe", "mailbox",
    "studio", "cellar", "attic", "boat shed", "workshop", "greenhouse", "guest house",
    "cabin", "school locker", "warehouse", "lab", "server room", "garden shed",
    "apartment lobby", "parking gate", "rooftop", "laundry room", "music room",
    "wine cellar", "tool chest", "filing cabinet", "diary lock", "piano room",
    "pool house", "back door", "side gate", "suitcase", "gun safe", "archive room",
    "meeting room", "print room", "loading dock", "bakery",
]  # fmt: skip
RELATIONS = [
    "dentist", "landlord", "piano teacher", "accountant", "plumber", "neighbour",
    "barber", "cousin", "godmother", "mentor", "coach", "vet", "tailor", "lawyer",
    "pharmacist", "mechanic", "florist", "electrician", "babysitter", "editor",
    "physiotherapist", "driving instructor", "optician", "gardener", "roommate",
    "manager", "nephew", "niece", "stepbrother", "best friend", "yoga teacher",
    "tax advisor", "baker", "locksmith", "beekeeper", "translator", "architect",
    "chess partner", "pen pal", "dog walker",
]  # fmt: skip
CATEGORIES = [
    ("tea", ["oolong", "rooibos", "sencha", "darjeeling", "chamomile", "earl grey"]),
    ("cheese", ["gruyere", "manchego", "stilton", "comte", "feta", "halloumi"]),
    ("colour", ["teal", "crimson", "ochre", "lavender", "olive", "navy"]),
    ("composer", ["Satie", "Dvorak", "Ravel", "Sibelius", "Purcell", "Gershwin"]),
    ("city", ["Lisbon", "Kyoto", "Tallinn", "Oaxaca", "Hobart", "Bergen"]),
    ("bird", ["kestrel", "heron", "wren", "puffin", "kingfisher", "lapwing"]),
    ("fruit", ["quince", "lychee", "persimmon", "gooseberry", "damson", "feijoa"]),
    ("board game", ["Go", "Hive", "Azul", "Carcassonne", "Patchwork", "Onitama"]),
    ("flower", ["peony", "freesia", "anemone", "ranunculus", "hellebore", "dahlia"]),
    ("spice", ["sumac", "cardamom", "fenugreek", "saffron", "nigella", "mace"]),
    ("painter", ["Vermeer", "Hokusai", "Kahlo", "Turner", "Morisot", "Klimt"]),
    ("tree", ["rowan", "linden", "hornbeam", "ginkgo", "alder", "cedar"]),
    ("soup", ["borscht", "gazpacho", "pho", "minestrone", "laksa", "ribollita"]),
    ("sport", ["fencing", "curling", "rowing", "squash", "bouldering", "handball"]),
    ("novelist", ["Austen", "Tolstoy", "Achebe", "Calvino", "Woolf", "Murakami"]),
    ("knot", ["bowline", "clove hitch", "sheet bend", "reef knot", "figure eight", "halyard"]),
    ("bread", ["focaccia", "rye", "brioche", "sourdough", "ciabatta", "pumpernickel"]),
    ("dance", ["tango", "waltz", "salsa", "polka", "flamenco", "foxtrot"]),
    ("mineral", ["quartz", "jade", "garnet", "opal", "onyx", "topaz"]),
    ("island", ["Skye", "Madeira", "Gotland", "Rhodes", "Tasmania", "Hokkaido"]),
    ("pasta", ["orecchiette", "pappardelle", "rigatoni", "farfalle", "bucatini", "fusilli"]),
    ("planet", ["Saturn", "Neptune", "Mercury", "Jupiter", "Venus", "Uranus"]),
    ("instrument", ["cello", "oboe", "banjo", "harp", "sitar", "marimba"]),
    ("herb", ["tarragon", "lovage", "sorrel", "chervil", "dill", "marjoram"]),
    ("mountain", ["Denali", "Olympus", "Kilimanjaro", "Matterhorn", "Fuji", "Elbrus"]),
    ("font", ["Garamond", "Futura", "Baskerville", "Helvetica", "Didot", "Gill Sans"]),
    ("poet", ["Rilke", "Neruda", "Basho", "Dickinson", "Szymborska", "Keats"]),
    ("river", ["Danube", "Mekong", "Shannon", "Orinoco", "Volga", "Loire"]),
    ("dessert", ["tiramisu", "baklava", "pavlova", "flan", "mochi", "trifle"]),
    ("gemstone", ["sapphire", "peridot", "tourmaline", "amethyst", "citrine", "beryl"]),
    ("season", ["early spring", "late autumn", "midsummer", "deep winter", "monsoon", "harvest"]),
    ("vegetable", ["kohlrabi", "fennel", "okra", "celeriac", "artichoke", "chard"]),
    ("coffee", ["cortado", "flat white", "ristretto", "macchiato", "lungo", "affogato"]),
    ("film genre", ["noir", "western", "musical", "heist", "screwball", "giallo"]),
    ("weekday", ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"]),
    ("constellation", ["Orion", "Lyra", "Cygnus", "Cassiopeia", "Draco", "Perseus"]),
    ("cocktail", ["negroni", "daiquiri", "sidecar", "gimlet", "paloma", "sazerac"]),
    ("card game", ["cribbage", "bridge", "canasta", "rummy", "euchre", "piquet"]),
    ("fabric", ["linen", "tweed", "corduroy", "velvet", "chambray", "seersucker"]),
    ("wine", ["riesling", "malbec", "gamay", "albarino", "nebbiolo", "chenin"]),
]
FIRST_NAMES = [
    "Amara", "Bilal", "Chiara", "Dmitri", "Esme", "Farid", "Greta", "Hiroshi", "Ingrid",
    "Jonah", "Kalani", "Lucia", "Mateo", "Nadia", "Oskar", "Priya", "Quentin", "Rosalind",
    "Soren", "Tamsin", "Ulla", "Viktor", "Wanjiru", "Xavier", "Yusuf", "Zofia",
]  # fmt: skip
LAST_NAMES = [
    "Okafor", "Lindqvist", "Moreau", "Tanaka", "Brennan", "Castellano", "Novak", "Haddad",
    "Fitzgerald", "Kowalski", "Mbeki", "Delacroix", "Ibarra", "Petrov", "Achterberg",
]  # fmt: skip
TOPICS = [
    "the weather this week", "a podcast about ancient Rome", "my plans for the weekend",
    "the train being late again", "a recipe I tried", "the football match",
    "a documentary on octopuses", "how to repot a cactus", "the price of groceries",
    "a museum exhibition", "learning to juggle", "a noisy construction site next door",
    "the best way to fold a map", "a strange dream I had", "cleaning the windows",
    "whether to buy a new kettle", "a crossword clue", "the history of tea clippers",
    "my houseplants", "a long walk by the canal",
]  # fmt: skip
REMARKS = [
    "I keep thinking about it.", "It was more interesting than I expected.",
    "What do you think about that?", "Maybe I am overthinking it.",
    "Anyway, it made me smile.", "I should write that down somewhere.",
    "It reminded me of my childhood.", "Do you have any suggestions?",
    "Honestly it was a bit boring.", "I might try it again soon.",
]  # fmt: skip
ANSWERS = [
    "That sounds lovely; tell me more whenever you like.",
    "Interesting! Small things like that often make a day better.",
    "I understand. It is worth taking a moment to think it through.",
    "Good point. Let me know if you want ideas or a second opinion.",
    "Thanks for sharing that with me; I am happy to keep chatting about it.",
]


@dataclass
class Fact:
    key: str  # "the door code of my garage"
    kind: str  # code, name, preference
    value: str
    planted_at: int
    corrected: str | None = None
    corrected_at: int | None = None

    @property
    def latest(self) -> str:
        return self.corrected or self.value


@dataclass
class Conversation:
    turns: int
    messages: list[dict[str, Any]] = field(default_factory=list)  # one user message a turn
    facts: list[Fact] = field(default_factory=list)

    def questions(self) -> list[tuple[int, Fact]]:
        return [
            (turn, self.facts[m["asks"]])
            for turn, m in enumerate(self.messages)
            if m.get("asks") is not None
        ]


def _value(kind: str, rng: random.Random, category: tuple[str, list[str]] | None) -> str:
    if kind == "code":
        return str(rng.randrange(1000, 10000))
    if kind == "name":
        return f"{rng.choice(FIRST_NAMES)} {rng.choice(LAST_NAMES)}"
    assert category is not None
    return rng.choice(category[1])


def _facts(count: int, rng: random.Random) -> list[tuple[str, str, Any]]:
    keys: list[tuple[str, str, Any]] = []
    keys += [(f"the door code of my {place}", "code", None) for place in PLACES]
    keys += [(f"the name of my {relation}", "name", None) for relation in RELATIONS]
    keys += [(f"my favourite {name}", "preference", (name, items)) for name, items in CATEGORIES]
    rng.shuffle(keys)
    return keys[:count]


def _statement(key: str, value: str, rng: random.Random) -> str:
    lead = rng.choice(["By the way, ", "Please remember this: ", "Just so you know, ", ""])
    text = f"{lead}{key} is {value}."
    return text[0].upper() + text[1:]


def _correction(key: str, value: str) -> str:
    return f"Correction: {key} has changed, it is now {value}."


def _question(key: str) -> str:
    return f"Quick question: what is {key}?"


def _small_talk(rng: random.Random) -> str:
    return (
        f"Let me tell you about {rng.choice(TOPICS)}. {rng.choice(REMARKS)} {rng.choice(REMARKS)}"
    )


def conversation(turns: int, *, facts: int | None = None, seed: int = 7) -> Conversation:
    """A conversation of ``turns`` user messages (see the module docstring)."""
    rng = random.Random(seed)
    count = facts if facts is not None else max(10, min(120, turns // 2))
    corrections = count // 4
    questions = count if turns >= 4 * count else max(1, turns // 5)
    gap = max(2, turns // 5)
    plant_until = max(count + corrections + 1, turns - gap - questions)
    if plant_until + gap > turns:
        raise ValueError(f"{turns} turns cannot hold {count} facts asked {gap} turns later")
    chosen = _facts(count, rng)
    slots: list[dict[str, Any] | None] = [None] * turns
    plant_turns = sorted(rng.sample(range(plant_until - corrections), count))
    made: list[Fact] = []
    for index, ((key, kind, category), turn) in enumerate(zip(chosen, plant_turns, strict=True)):
        value = _value(kind, rng, category)
        made.append(Fact(key, kind, value, turn))
        slots[turn] = {"content": _statement(key, value, rng), "plants": index}
    # corrections: later than the fact, before the question
    for index in rng.sample(range(count), corrections):
        fact = made[index]
        free = [t for t in range(fact.planted_at + gap // 2, plant_until) if slots[t] is None]
        if not free:
            continue
        turn = rng.choice(free)
        key, kind, category = chosen[index]
        new = _value(kind, rng, category)
        while new == fact.value:
            new = _value(kind, rng, category)
        fact.corrected, fact.corrected_at = new, turn
        slots[turn] = {"content": _correction(fact.key, new), "corrects": index}
    # questions: each at least `gap` turns after the fact's last statement
    asked = rng.sample(range(count), min(questions, count))
    for index in asked:
        fact = made[index]
        earliest = max(fact.corrected_at or fact.planted_at, fact.planted_at) + gap
        free = [t for t in range(earliest, turns) if slots[t] is None]
        if free:
            slots[rng.choice(free)] = {"content": _question(fact.key), "asks": index}
    messages = [slot or {"content": _small_talk(rng)} for slot in slots]
    for message in messages:
        message["role"] = "user"
    return Conversation(turns, messages, made)


def answer(rng: random.Random) -> str:
    """What the scripted assistant says to small talk."""
    return rng.choice(ANSWERS)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    data = conversation(args.turns, seed=args.seed)
    with args.out.open("w", encoding="utf-8") as out:
        for message in data.messages:
            out.write(json.dumps(message) + "\n")
    corrected = sum(1 for fact in data.facts if fact.corrected)
    print(
        f"{args.out}: {args.turns} turns, {len(data.facts)} facts ({corrected} corrected), "
        f"{len(data.questions())} questions"
    )


if __name__ == "__main__":
    main()
