"""Generated episode sentences and questions the speed benchmarks share."""

import random

NAMES = [
    "Caroline",
    "Melanie",
    "Jon",
    "Gina",
    "Tim",
    "John",
    "Maria",
    "Joanna",
    "Nate",
    "Audrey",
    "Andrew",
    "Evan",
    "Sam",
    "Priya",
    "Deborah",
    "Jolene",
    "Calvin",
    "Dave",
    "Lena",
    "Omar",
    "Yuki",
    "Tomas",
    "Aisha",
    "Bruno",
    "Chloe",
    "Diego",
    "Elif",
    "Farah",
    "Greta",
    "Hiro",
    "Ines",
    "Jamal",
    "Kofi",
    "Lucia",
    "Mateo",
    "Nadia",
    "Oscar",
    "Paula",
    "Quinn",
    "Rosa",
]
ACTIVITIES = [
    "went hiking",
    "signed up for a pottery class",
    "started learning the guitar",
    "adopted a rescue dog",
    "ran a half marathon",
    "painted a sunrise",
    "visited an art museum",
    "volunteered at the shelter",
    "baked sourdough bread",
    "joined a book club",
    "planted tomatoes",
    "repaired an old bicycle",
    "took a photography workshop",
    "went camping",
    "tried rock climbing",
    "cooked a Thai curry",
    "attended a jazz concert",
    "wrote a short story",
    "went to a support group",
    "applied for a new job",
    "moved to a new apartment",
    "started a podcast",
    "learned to swim",
    "built a bookshelf",
    "went kayaking",
    "celebrated a birthday",
    "organised a charity bake sale",
    "studied for an exam",
    "watched a documentary about whales",
    "went birdwatching",
    "visited their grandparents",
    "bought a used car",
    "got a tattoo",
    "finished a puzzle",
    "hosted a dinner party",
    "went to a yoga retreat",
    "traveled by train",
    "lost their phone",
    "fixed the kitchen sink",
    "gave a talk at work",
    "researched adoption agencies",
    "went skiing",
    "started therapy",
    "knitted a scarf",
    "read a novel about space travel",
    "went fishing",
    "taught a coding class",
    "ran into an old friend",
    "planned a road trip",
    "joined a choir",
]
PLACES = [
    "in Boston",
    "at the lake",
    "near the beach",
    "in the mountains",
    "downtown",
    "at the community center",
    "in Paris",
    "at the park",
    "in their hometown",
    "at the library",
    "in Tokyo",
    "at the farmers market",
    "in the garden",
    "at a friend's house",
    "in Barcelona",
    "at the gym",
    "in the countryside",
    "at the office",
    "in Chicago",
    "on the island",
]
TIMES = [
    "last weekend",
    "yesterday",
    "two weeks ago",
    "this morning",
    "last summer",
    "in May 2023",
    "on Tuesday evening",
    "over the holidays",
    "last month",
    "a few days ago",
    "in the spring",
    "after work",
    "on their birthday",
    "during the vacation",
    "last year",
]
FEELINGS = [
    "and loved it",
    "and felt proud",
    "but it rained the whole time",
    "with their sister",
    "with some coworkers",
    "and it was exhausting",
    "and wants to do it again",
    "to relax after a stressful week",
    "and met a lot of kind people",
    "and took many photos",
    "",
    "",
    "",
]
PREDICATES = [
    "hobby",
    "pet",
    "job",
    "home city",
    "favourite food",
    "goal",
    "instrument",
    "sport",
    "book",
    "fear",
]
BUTLERS = ["chat", "email", "calendar", "health", "travel", "finance", "social", "work"]
QUESTIONS = [
    "What did {name} do {time}?",
    "Where did {name} go {time}?",
    "Has {name} ever {activity}?",
    "Who {activity} {place}?",
    "When did {name} {activity_bare}?",
    "What does {name} enjoy {place}?",
]


def sentence(rng: random.Random) -> str:
    """One varied episode sentence."""
    parts = [
        rng.choice(NAMES),
        rng.choice(ACTIVITIES),
        rng.choice(PLACES),
        rng.choice(TIMES),
        rng.choice(FEELINGS),
    ]
    return " ".join(p for p in parts if p) + "."


def question(rng: random.Random, index: int) -> str:
    """A distinct natural-language question (the index keeps every one different)."""
    return question_with_parts(rng, index)[0]


def question_with_parts(rng: random.Random, index: int) -> tuple[str, list[str]]:
    """`question`'s text and the sentence parts it names (a name, a time, a place, an
    activity without its verb), which an episode that answers it holds."""
    activity = rng.choice(ACTIVITIES)
    template = rng.choice(QUESTIONS)
    values = {
        "name": rng.choice(NAMES),
        "time": rng.choice(TIMES),
        "place": rng.choice(PLACES),
        "activity": activity,
        "activity_bare": activity.split(" ", 1)[1],
    }
    text = template.format(**values)
    named = [
        values["activity_bare" if key == "activity" else key]
        for key in ("name", "time", "place", "activity", "activity_bare")
        if "{" + key + "}" in template
    ]
    text = f"{text} ({index})" if index % 2 else text.replace("?", f" #{index}?")
    return text, named
