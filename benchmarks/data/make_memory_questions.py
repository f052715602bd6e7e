"""Generate ``memory_questions.json``, the question set of ``bench_memory_quality.py``.

Run from the repository root (seeded: the same file every time)::

    python benchmarks/data/make_memory_questions.py [--seed 19] [--users 40] [--out PATH]

Each user gets facts about themselves (where they live, their job, pet, food...), each written
in one of several wordings, spread over several sessions, plus facts that change later ("now
lives in ..."). Questions, in five categories, name the memory that answers them:

- ``single``: one fact, asked plainly;
- ``updated``: a fact whose value changed in a later session (the answer is the new memory,
  and ``stale`` names the old one, which must rank below it);
- ``multi_session``: asked from a session other than the one the fact was told in;
- ``paraphrase``: asked in words the memory does not use;
- ``no_answer``: about something the user never said (``answer`` is null).

``pairs`` are for de-duplication: ``same`` pairs say one fact twice (a rerun with other case
or punctuation, or another wording of the same value), ``distinct`` pairs say two different
facts (the same kind of fact with another value, or another kind of fact).

The file format (what a second, unseen set must follow): ``{"users": [{"user_id", "sessions":
[{"session_id", "memories": [{"key", "text"}]}]}], "questions": [{"user_id", "category",
"question", "answer": key|null, "stale": key|null}], "pairs": [{"a", "b", "same": bool}]}``.
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

HERE = Path(__file__).resolve().parent

# kind: (wordings of the fact, plain questions, paraphrased questions, values, update wording)
FACTS: dict[str, tuple[list[str], list[str], list[str], list[str], str]] = {
    "city": (
        ["User lives in {v}", "The user's home is in {v}", "User is based in {v}"],
        ["Where does the user live?", "Which city does the user live in?"],
        ["What town is the user's home?", "Where is the user's place these days?"],
        ["Oslo", "Lisbon", "Nairobi", "Toronto", "Osaka", "Lima", "Krakow", "Dublin", "Austin"],
        "User moved to {v} and lives there now",
    ),
    "job": (
        ["User works as a {v}", "User is a {v} by profession", "The user's job: {v}"],
        ["What does the user work as?", "What is the user's job?"],
        ["How does the user earn a living?", "What is their occupation?"],
        ["nurse", "carpenter", "data analyst", "pilot", "chef", "lawyer", "librarian"],
        "User changed careers and now works as a {v}",
    ),
    "pet": (
        ["User has a pet {v}", "User owns a {v} as a pet", "The user keeps a {v} at home"],
        ["What pet does the user have?", "Does the user own an animal?"],
        ["Which animal lives with the user?", "What kind of companion animal do they keep?"],
        ["tabby cat", "golden retriever", "parrot", "hamster", "tortoise", "rabbit"],
        "User's new pet is a {v}",
    ),
    "food": (
        [
            "User's favourite food is {v}",
            "User loves eating {v}",
            "The dish the user likes best is {v}",
        ],
        ["What is the user's favourite food?", "What food does the user like most?"],
        ["Which meal would make the user happiest?", "What should I cook for them?"],
        ["ramen", "paella", "lasagne", "tacos", "sushi", "falafel", "dumplings"],
        "These days the user's favourite food is {v}",
    ),
    "allergy": (
        [
            "User is allergic to {v}",
            "User has an allergy to {v}",
            "The user cannot eat {v}: allergy",
        ],
        ["What is the user allergic to?", "Does the user have any allergies?"],
        ["Which ingredient must I avoid when cooking for them?", "What makes the user sick?"],
        ["peanuts", "shellfish", "gluten", "eggs", "sesame", "soy"],
        "User's doctor found the real allergy is {v}",
    ),
    "sport": (
        ["User plays {v} on weekends", "User enjoys playing {v}", "The user's sport is {v}"],
        ["Which sport does the user play?", "What does the user play on weekends?"],
        ["How does the user keep fit?", "What game do they practise for exercise?"],
        ["tennis", "basketball", "volleyball", "badminton", "rugby", "squash"],
        "User gave up the old sport and now plays {v}",
    ),
    "language": (
        ["User is learning {v}", "User studies the {v} language", "The user takes {v} lessons"],
        ["Which language is the user learning?", "What language does the user study?"],
        ["Which foreign tongue are they picking up?", "What are their language classes in?"],
        ["Japanese", "Portuguese", "Swahili", "German", "Korean", "Italian"],
        "User switched to learning {v}",
    ),
    "instrument": (
        ["User plays the {v}", "User practises the {v} every evening", "The user is a {v} player"],
        ["What instrument does the user play?", "Does the user play music?"],
        ["Which instrument do they practise?", "What do they make music on?"],
        ["piano", "violin", "cello", "trumpet", "saxophone", "drums"],
        "User now plays the {v} instead",
    ),
    "drink": (
        [
            "User drinks {v} every morning",
            "User starts each day with {v}",
            "The user's morning drink is {v}",
        ],
        ["What does the user drink in the morning?", "What is the user's morning drink?"],
        ["How do they begin their day, beverage-wise?", "What should I pour them at breakfast?"],
        ["black coffee", "green tea", "orange juice", "hot chocolate", "matcha latte"],
        "User's morning drink is now {v}",
    ),
    "car": (
        ["User drives a {v}", "User's car is a {v}", "The user owns a {v}"],
        ["What car does the user drive?", "What is the user's car?"],
        ["What vehicle do they get around in?", "Which automobile is theirs?"],
        ["red Volvo", "blue Toyota", "white Tesla", "grey Fiat", "green Subaru"],
        "User sold the old car and drives a {v} now",
    ),
    "birthday": (
        [
            "User's birthday is in {v}",
            "User was born in {v}",
            "The user celebrates their birthday in {v}",
        ],
        ["When is the user's birthday?", "In which month was the user born?"],
        [
            "When should I send them a card for their big day?",
            "What month do they turn a year older?",
        ],
        ["January", "March", "May", "August", "October", "December"],
        "User corrected that the birthday is in {v}",
    ),
    "employer": (
        ["User works at {v}", "User's employer is {v}", "The user has a job at {v}"],
        ["Where does the user work?", "Which company employs the user?"],
        ["Who pays the user's salary?", "Which firm are they with?"],
        ["Acme Corp", "Globex", "Initech", "Umbrella Labs", "Stark Industries", "Hooli"],
        "User joined {v} and works there now",
    ),
    "music": (
        ["User listens to {v}", "User's favourite music is {v}", "The user enjoys {v} music"],
        ["What music does the user like?", "What does the user listen to?"],
        ["What should I play at their party?", "Which genre do they stream?"],
        ["jazz", "heavy metal", "reggae", "classical", "bluegrass", "techno"],
        "User is into {v} now",
    ),
    "diet": (
        ["User follows a {v} diet", "User eats {v}", "The user keeps to a {v} diet"],
        ["What diet does the user follow?", "Does the user have a diet?"],
        ["What are their eating habits?", "Any dietary rules for them?"],
        ["vegan", "vegetarian", "keto", "pescatarian", "low-sodium"],
        "User switched to a {v} diet",
    ),
}
# Asked of users who never said so: the no-answer questions.
UNSAID = [
    "What is the user's blood type?",
    "How many siblings does the user have?",
    "What is the name of the user's dentist?",
    "Which football club does the user support?",
    "What is the user's shoe size?",
    "Where did the user go to university?",
    "What is the user's favourite film?",
    "Which political party does the user vote for?",
]
# Said by everyone, about nothing asked: filler that questions must see past.
FILLER = [
    "User asked to keep answers short",
    "User mentioned the weather was rainy today",
    "User said thanks for the help with the spreadsheet",
    "User wants reminders sent by email",
    "User is planning a trip next spring",
    "User prefers metric units",
    "User asked about tax deadlines",
    "User finds long meetings tiring",
    "User is reading a history book",
    "User wants to repaint the kitchen",
]


def variants(text: str, rng: random.Random) -> str:
    """The same words as a rerun might type them: case, punctuation, spacing."""
    choice = rng.randrange(4)
    if choice == 0:
        return text + "."
    if choice == 1:
        return text.lower()
    if choice == 2:
        return "  " + text.replace(" ", "  ", 1) + " "
    return text.replace("User", "The user", 1) if text.startswith("User") else text + "!"


def make(seed: int, users: int) -> dict:
    rng = random.Random(seed)
    out_users, questions, pairs = [], [], []
    kinds = list(FACTS)
    for u in range(users):
        user_id = f"user{u:03d}"
        sessions = [{"session_id": f"{user_id}-s{n}", "memories": []} for n in range(3)]
        chosen = rng.sample(kinds, 10)
        updated = set(chosen[:3])
        for filler in rng.sample(FILLER, 5):
            sessions[rng.randrange(3)]["memories"].append({"key": None, "text": filler})
        for kind in chosen:
            wordings, plain, reworded, values, update = FACTS[kind]
            value, later = rng.sample(values, 2)
            told = rng.randrange(2)  # session 0 or 1; updates come in session 2
            key = f"{user_id}:{kind}"
            text = rng.choice(wordings).format(v=value)
            sessions[told]["memories"].append({"key": key, "text": text})
            asked_from = f"{user_id}-s{(told + 1) % 3}"
            if kind in updated:
                new_key = f"{key}:new"
                sessions[2]["memories"].append({"key": new_key, "text": update.format(v=later)})
                questions.append(_question(user_id, "updated", rng.choice(plain), new_key, key))
                continue
            questions.append(_question(user_id, "single", rng.choice(plain), key))
            questions.append(_question(user_id, "paraphrase", rng.choice(reworded), key))
            questions.append(
                _question(user_id, "multi_session", rng.choice(plain), key, session=asked_from)
            )
        for unsaid in rng.sample(UNSAID, 2):
            questions.append(_question(user_id, "no_answer", unsaid, None))
        out_users.append({"user_id": user_id, "sessions": sessions})
    for _ in range(users * 6):
        kind = rng.choice(kinds)
        wordings, _, _, values, _ = FACTS[kind]
        value, other = rng.sample(values, 2)
        first, second = rng.sample(wordings, 2)
        text = first.format(v=value)
        pairs.append({"a": text, "b": variants(text, rng), "same": True})
        pairs.append({"a": text, "b": second.format(v=value), "same": True})
        pairs.append({"a": text, "b": first.format(v=other), "same": False})
        other_kind = rng.choice([k for k in kinds if k != kind])
        other_text = rng.choice(FACTS[other_kind][0]).format(v=rng.choice(FACTS[other_kind][3]))
        pairs.append({"a": text, "b": other_text, "same": False})
    return {"seed": seed, "users": out_users, "questions": questions, "pairs": pairs}


def _question(
    user_id: str,
    category: str,
    question: str,
    answer: str | None,
    stale: str | None = None,
    session: str | None = None,
) -> dict:
    return {
        "user_id": user_id,
        "session_id": session,
        "category": category,
        "question": question,
        "answer": answer,
        "stale": stale,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seed", type=int, default=19)
    parser.add_argument("--users", type=int, default=40)
    parser.add_argument("--out", type=Path, default=HERE / "memory_questions.json")
    args = parser.parse_args()
    data = make(args.seed, args.users)
    args.out.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    counts: dict[str, int] = {}
    for question in data["questions"]:
        counts[question["category"]] = counts.get(question["category"], 0) + 1
    print(f"{args.out}: {len(data['questions'])} questions {counts}, {len(data['pairs'])} pairs")


if __name__ == "__main__":
    main()
