"""A conversational evaluation set generated with planted facts (built at run time, never committed).

Sessions of two or three people of a cast of eight (plus, in some, the assistant), spread over
fourteen months; each session is small talk, topic echoes (turns that share a fact's nouns
without holding it) and a few planted facts. A fact is one turn by its owner; a question asks
for it in other words, naming the owner (and in some the month), never quoting the turn:

* ``context`` facts keep their topic in the turn before ("How was Lisbon?" / "We stayed four
  nights") — only the speaker and the neighbouring turn make them findable;
* ``paraphrase`` facts say the thing with other words than the question ("adopted a puppy" /
  "new dog");
* ``identifier`` facts carry an order number, a code or a version the question repeats exactly.

The same kinds of fact recur for several people (everyone travels, several people adopt pets),
so a question is answered by one turn among many near misses.

Every question has a ``type``: ``single`` (one turn answers it), ``temporal`` (it names the month,
or asks when or on what day) or ``multi-hop``. Multi-hop questions come after the others and need
two planted facts said in two different sessions, both turns being the evidence:

* two people, the same kind of fact: "Who finished their run faster, Maya or Tom?";
* one person, two kinds of fact: "Which came first for Maya: adopting a pet or joining the club?"
  (the sessions' dates answer it).

They are drawn with a random stream of their own after the rest is built, from facts whose
(person, kind) is planted once only, so the sessions, the turns and the other questions of a seed
are the same as before they existed. ``build(seed)`` is deterministic:
the same seed gives the same sessions, turns and questions, on any machine. Everything is
written here by this module (no external material, so no licence to carry).
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta

CAST = ("Maya", "Tom", "Priya", "Jonas", "Aiko", "Carlos", "Lena", "Omar")
PARTNERS = ("Sam", "Alex", "Robin", "Jamie", "Noor", "Kai")  # people spoken of, never speaking
MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December")
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")

V = {
    "city": ["Lisbon", "Kyoto", "Oslo", "Marrakesh", "Montreal", "Valencia", "Hanoi", "Edinburgh", "Cusco",
             "Tallinn", "Porto", "Seoul", "Dublin", "Krakow"],
    "pet": [("puppy", "dog"), ("kitten", "cat"), ("rabbit", "bunny"), ("parrot", "bird"), ("greyhound", "dog"),
            ("tabby", "cat")],
    "petname": ["Biscuit", "Pepper", "Mochi", "Ziggy", "Luna", "Noodle", "Pickle", "Waffles", "Juniper", "Otis"],
    "instrument": ["cello", "ukulele", "piano", "violin", "drums", "saxophone", "harp", "trumpet"],
    "dish": ["lasagna", "ramen", "paella", "lamb curry", "dumplings", "shakshuka", "moussaka", "risotto"],
    "sport": ["bouldering", "rowing", "fencing", "squash", "judo", "water polo", "badminton", "archery"],
    "job": ["nurse", "architect", "data analyst", "pastry chef", "translator", "electrician", "paramedic"],
    "company": ["Northwind", "Brightlane", "Kestrel Labs", "Alder & Co", "Bluefin", "Quarry Systems", "Tidewell"],
    "allergen": [("peanuts", "nuts"), ("shellfish", "seafood"), ("sesame", "seeds"), ("kiwi", "fruit"),
                 ("gluten", "wheat"), ("dairy", "milk")],
    "book": ["The Glass Orchard", "Salt and Iron", "A Map of Small Hours", "The Lantern Keeper", "Northern Tide",
             "Paper Moons", "The Quiet Engine"],
    "car": ["Volvo estate", "Subaru Outback", "Kia Niro", "Fiat Panda", "Skoda Octavia", "Toyota Yaris"],
    "gift": ["leather watch strap", "hand-thrown teapot", "vintage camera", "silk scarf", "record player",
             "cashmere jumper"],
    "restaurant": ["Casa Mar", "the Blue Heron", "Osteria Nove", "Little Saigon", "the Copper Pot", "Fika House"],
    "plant": ["orchid", "jasmine", "clematis", "hibiscus", "peace lily", "camellia"],
    "language": ["Portuguese", "Japanese", "Norwegian", "Arabic", "Korean", "Polish", "Greek"],
    "band": ["The Lumineers", "Khruangbin", "Arcade Fire", "Bonobo", "Fleet Foxes", "Phoenix"],
    "season": [("autumn", "fall"), ("spring", "springtime"), ("winter", "the cold months"), ("summer", "summertime")],
    "item": ["dishwasher", "laptop charger", "bike wheel", "kettle", "router", "office chair"],
    "child": ["Ella", "Noah", "Zara", "Leo", "Ines", "Felix"],
    "theme": ["dinosaur", "space", "pirate", "mermaid", "jungle", "superhero"],
    "school": ["Riverside Primary", "St. Anne's", "Hillcrest Academy", "the Montessori on Elm Street"],
    "injury_sport": ["five-a-side football", "tennis", "basketball", "netball", "ultimate frisbee"],
    "place": ["the library", "the train station", "the gym", "the farmers market", "the cinema"],
}


@dataclass(frozen=True)
class Fact:
    kind: str
    setup: str | None  # said by someone else right before the fact, or None
    fact: str
    questions: tuple[str, ...]


def _facts(r: random.Random, owner: str, other: str) -> list[Fact]:
    """One instance of every fact template for ``owner`` (``other`` asks the setup questions)."""
    def p(key: str):
        return r.choice(V[key])
    city, city2 = r.sample(V["city"], 2)
    pet, petsyn = p("pet")
    allergen, allergy_syn = p("allergen")
    season, season_syn = p("season")
    n, km, hours, mins = r.randint(2, 9), r.choice([10, 21, 42]), r.randint(1, 4), r.randint(2, 58)
    amount, rent = r.randrange(4000, 40000, 500), r.randrange(650, 2400, 25)
    order = f"ORD-{r.randint(2024, 2026)}-{r.randint(1, 9999):04d}"
    flight = f"{r.choice(['TP', 'KL', 'LH', 'FR', 'SK', 'IB'])} {r.randint(100, 9999)}"
    code = f"{r.randint(1000, 9999)}#"
    ver = f"3.{r.randint(9, 13)}"
    month = r.choice(MONTHS)
    weekday = r.choice(WEEKDAYS)
    clock = f"{r.randint(7, 18)}:{r.choice(['00', '15', '30', '45'])}"
    child, age = p("child"), r.randint(4, 11)
    partner = r.choice(PARTNERS)
    return [
        Fact("context", f"You're back from {city}! How was it, {owner}?",
             f"Wonderful, honestly. We stayed {n} nights in a little guesthouse near the harbour.",
             (f"How long did {owner} stay in {city}?", f"For how many nights was {owner} away in {city}?")),
        Fact("paraphrase", None,
             f"Big news: we adopted a {pet} from the shelter on Sunday, we named him {p('petname')}.",
             (f"What is the name of {owner}'s new {petsyn}?", f"What did {owner} call the animal they took home?")),
        Fact("context", "Are you still taking those lessons?",
             f"Yes, {p('instrument')} every Thursday evening. My teacher is incredibly patient with me.",
             (f"Which instrument is {owner} learning to play?", f"What does {owner} study on Thursday nights?")),
        Fact("paraphrase", None,
             f"I cooked {p('dish')} for twelve people on Saturday and there were no leftovers at all.",
             (f"What meal did {owner} prepare for the big group?", f"Which dish did {owner} make for a dozen guests?")),
        Fact("paraphrase", None,
             f"I accepted the offer from {p('company')}; I start as a {p('job')} in {month}.",
             (f"Which company hired {owner}?", f"Who is {owner}'s new employer?")),
        Fact("paraphrase", None,
             f"Just so you know, I'm allergic to {allergen}, so none in the dessert please.",
             (f"What can't {owner} eat because of an allergy?", f"Which {allergy_syn} must be kept away from {owner}?")),
        Fact("context", "Did you manage to finish the race in the end?",
             f"I did! {km} kilometres in {hours} hours {mins} minutes, my best time so far.",
             (f"How long did it take {owner} to complete the run?", f"What was {owner}'s finishing time?")),
        Fact("paraphrase", None,
             f"We're moving to {city2} at the end of {month}; the boxes are already everywhere.",
             (f"Where is {owner} relocating to?", f"Which city will {owner} live in after the move?")),
        Fact("paraphrase", None,
             f"My daughter {child} turns {age} next week and she wants a {p('theme')} party.",
             (f"What kind of birthday celebration does {owner}'s daughter want?",
              f"What theme did {child} pick for the party?")),
        Fact("identifier", None,
             f"The replacement {p('item')} is ordered, the order number is {order}.",
             (f"What was ordered under {order}?", f"Which replacement does order {order} cover?")),
        Fact("context", f"When do you fly out to {city}?",
             f"Flight {flight} on {weekday}, landing around {clock}.",
             (f"Which flight is {owner} taking to {city}?", f"On what day does {owner} travel to {city}?")),
        Fact("paraphrase", None,
             f"We sold the old hatchback and bought a used {p('car')} with barely any miles on it.",
             (f"What vehicle did {owner} purchase?", f"Which car does {owner} drive now?")),
        Fact("paraphrase", None,
             f"I've joined a {p('sport')} club, we train twice a week at the community centre.",
             (f"Which sport did {owner} take up?", f"What club did {owner} sign up for?")),
        Fact("context", "What are you reading these days?",
             f"{p('book')}. I can't put it down, the ending of chapter three floored me.",
             (f"Which book is {owner} reading at the moment?", f"What novel has {owner} hooked?")),
        Fact("identifier", None,
             f"The gate code for the cabin is {code}, don't lose it.",
             (f"What is the code {code} for?", f"Where does the code {code} get you in?")),
        Fact("context", "Did they find you a new slot at the dentist?",
             f"Yes, it got moved to {weekday} at {clock}.",
             (f"When is {owner}'s dental appointment?", f"What time is {owner} seeing the dentist?")),
        Fact("context", f"What did you get {partner} for the anniversary?",
             f"A {p('gift')}; it took me weeks to find one in that colour.",
             (f"What anniversary present did {owner} buy?", f"Which gift did {owner} pick for {partner}?")),
        Fact("context", f"Any restaurant tips for {city}?",
             f"Go to {p('restaurant')}, order the {p('dish')} and ask for a table by the window.",
             (f"Which restaurant in {city} did {owner} recommend?", f"Where should you eat in {city}, per {owner}?")),
        Fact("paraphrase", None,
             f"My {p('plant')} finally flowered after three years on the balcony.",
             (f"Which plant bloomed on {owner}'s balcony?", f"What finally blossomed for {owner}?")),
        Fact("paraphrase", None,
             f"I've been practising {p('language')} on the train every morning, I can order coffee now.",
             (f"What language is {owner} studying?", f"Which language is {owner} picking up on the commute?")),
        Fact("paraphrase", None,
             f"We agreed to cap the renovation budget at {amount} euros.",
             (f"What is the spending limit for {owner}'s renovation?", f"How much can {owner} spend on the works?")),
        Fact("paraphrase", None,
             f"I twisted my ankle playing {p('injury_sport')}, so no hiking for a month.",
             (f"How did {owner} get injured?", f"What game was {owner} playing when they got hurt?")),
        Fact("context", "Who did you see on Friday night?",
             f"{p('band')}! They played for almost three hours straight.",
             (f"Which band did {owner} see live?", f"What concert did {owner} go to?")),
        Fact("identifier", None,
             f"The build server is on Python {ver} now, the upgrade went smoothly.",
             (f"Which Python version does {owner}'s build server run?", f"What did {owner} upgrade to Python {ver}?")),
        Fact("paraphrase", None,
             f"The flat costs {rent} a month, heating included.",
             (f"How much rent does {owner} pay?", f"What is {owner}'s monthly housing cost?")),
        Fact("paraphrase", None,
             f"Honestly {season} is my favourite season, the light is just better.",
             (f"Which time of year does {owner} like best?", f"Does {owner} prefer {season_syn}?")),
        Fact("paraphrase", None,
             f"Someone stole my bike outside {p('place')} on {weekday}.",
             (f"Where was {owner}'s bicycle taken from?", f"From where did {owner} lose their bike to a thief?")),
        Fact("paraphrase", None,
             f"{child} starts at {p('school')} in September, it's a ten-minute walk from us.",
             (f"Which school will {owner}'s kid attend?", f"Where is {child} enrolled?")),
    ]


SMALL_TALK = [
    "haha yes", "Sounds good, talk later!", "Did you see the game last night?", "I'm so tired this week.",
    "Same here.", "Oh no, really?", "That's hilarious.", "Can you send me the photos?", "Sure, give me a minute.",
    "Coffee tomorrow?", "Traffic was terrible this morning.", "It's been raining all day here.",
    "I need a holiday.", "Thanks for yesterday, it was fun.", "Let me check my calendar.", "No worries at all.",
    "Are you free on the weekend?", "I'll bring snacks.", "Good luck with the meeting!", "Miss you guys.",
    "What time works for you?", "Running late, sorry!", "Okay, see you there.", "That sounds exhausting.",
]
ECHOES = [
    "I'd love to visit {city} someday.", "My cousin plays the {instrument} too, badly.",
    "Is a {pet} a lot of work, do you think?", "{company} keeps posting jobs, I wonder why.",
    "I tried making {dish} once, total disaster.", "Have you ever tried {sport}?",
    "My sister read {book} and hated it.", "{city} is supposed to be gorgeous in {month}.",
    "Our {item} broke again, I swear it's cursed.", "We should go to a concert sometime.",
    "Restaurants in {city} are so expensive now.", "I keep killing every {plant} I buy.",
    "I always wanted to learn {language}.", "Rent is going up everywhere.", "The dentist is my least favourite place.",
    "We should plan a trip this year.", "Did you watch that documentary about {city}?",
    "{band} are touring again, apparently.", "My neighbour just bought a {car}.", "Flights are so pricey right now.",
]
ASSISTANT_LINES = [
    "Noted. I'll remind you the day before.", "Here is a short summary of what you planned.",
    "I added it to your list.", "Would you like me to set a reminder?", "I can help compare the options.",
]


@dataclass
class Turn:
    id: str
    session: str
    speaker: str
    text: str
    at: datetime


@dataclass
class Question:
    text: str
    answer: str  # the id of the turn that holds the fact (the first one, for a multi-hop question)
    kind: str
    owner: str
    type: str = "single"
    also: tuple[str, ...] = ()  # the other evidence turns of a multi-hop question
    fact: int = -1  # which template of _facts planted it (single and temporal questions)

    @property
    def evidence(self) -> tuple[str, ...]:
        return (self.answer, *self.also)


_TEMPORAL = re.compile(r"^(In (" + "|".join(MONTHS) + r") \d{4}, |When |On what day |What time )")


def question_type(text: str) -> str:
    """``temporal`` for a question that names the month or asks when, else ``single``."""
    return "temporal" if _TEMPORAL.match(text) else "single"


# multi-hop wording, by the index of the fact template in _facts: the same fact of two people ...
COMPARE = {
    0: "Who spent more nights away on their trip, {a} or {b}?",
    1: "What names did {a} and {b} give the animals they took home?",
    2: "Are {a} and {b} learning the same instrument?",
    3: "Did {a} and {b} make the same meal for their big dinners?",
    4: "Did {a} and {b} get hired by the same employer?",
    5: "Do {a} and {b} have to avoid the same food?",
    6: "Who completed their run in less time, {a} or {b}?",
    7: "Are {a} and {b} relocating to the same city?",
    8: "What party themes did {a}'s and {b}'s daughters ask for?",
    11: "Which vehicles did {a} and {b} end up buying?",
    12: "Did {a} and {b} take up the same sport?",
    13: "Are {a} and {b} hooked on the same novel?",
    16: "What anniversary presents did {a} and {b} pick?",
    18: "Which plants finally blossomed for {a} and {b}?",
    19: "Are {a} and {b} studying the same language?",
    20: "Whose renovation has the larger spending limit, {a}'s or {b}'s?",
    21: "Did {a} and {b} get hurt playing the same game?",
    22: "Did {a} and {b} go to the same concert?",
    24: "Who has the higher monthly housing cost, {a} or {b}?",
    25: "Do {a} and {b} like the same time of year best?",
    26: "Were {a}'s and {b}'s bicycles taken from the same place?",
    27: "Will {a}'s and {b}'s kids attend the same school?",
}
# ... and two facts of one person, put in order by the sessions' dates
EVENTS = {
    0: "coming back from the guesthouse trip",
    1: "taking the new pet home",
    3: "cooking for a dozen guests",
    4: "accepting the job offer",
    6: "finishing the race",
    7: "telling everyone about the move",
    11: "buying the used car",
    12: "joining the sports club",
    16: "finding the anniversary present",
    18: "the balcony plant blooming",
    21: "hurting an ankle",
    22: "going to the concert",
    23: "upgrading the build server",
    26: "having the bike stolen",
}


@dataclass
class ConversationSet:
    sessions: dict[str, list[Turn]] = field(default_factory=dict)
    questions: list[Question] = field(default_factory=list)

    @property
    def turns(self) -> list[Turn]:
        return [t for turns in self.sessions.values() for t in turns]


def _echo(r: random.Random) -> str:
    return r.choice(ECHOES).format(**{k: (r.choice(v)[0] if isinstance(v[0], tuple) else r.choice(v))
                                      for k, v in V.items()}, month=r.choice(MONTHS))


def build(seed: int = 22, sessions: int = 48, questions: int = 300, facts_per_session: int = 7,
          filler: tuple[int, int] = (22, 34), multi_hop: int = 60) -> ConversationSet:
    """The whole set, deterministic for a seed: ``questions`` single and temporal questions, then
    up to ``multi_hop`` multi-hop ones."""
    r = random.Random(seed)
    out = ConversationSet()
    start = datetime(2025, 1, 6, 9, 0)
    days = sorted(r.sample(range(0, 420), sessions))
    pending: list[Question] = []
    used: set[tuple] = set()
    for s in range(sessions):
        sid = f"conv-{s:03d}"
        people = r.sample(CAST, r.choice((2, 2, 3)))
        with_assistant = r.random() < 0.3
        at = start + timedelta(days=days[s], hours=r.randint(0, 10))
        script: list[tuple[str, str, Question | None]] = []
        for _ in range(r.randint(*filler)):
            who = r.choice(people + (["assistant"] if with_assistant else []))
            line = r.choice(ASSISTANT_LINES) if who == "assistant" else (
                _echo(r) if r.random() < 0.4 else r.choice(SMALL_TALK))
            script.append((who, line, None))
        month = f"{MONTHS[at.month - 1]} {at.year}"
        for _ in range(facts_per_session):
            owner = r.choice(people)
            other = r.choice([p for p in people if p != owner])
            facts = _facts(r, owner, other)
            # each (owner, kind of fact) once, or else once per month with the month in the question:
            # every question has exactly one answer
            fresh = [i for i in range(len(facts)) if (owner, i) not in used]
            dated = [i for i in range(len(facts)) if (owner, i, month) not in used]
            if not dated:
                continue
            pick = r.choice(fresh) if fresh else r.choice(dated)
            fact = facts[pick]
            q = r.choice(fact.questions)
            if not fresh or (owner, pick, month) in used or r.random() < 0.25:
                q = f"In {month}, " + q[0].lower() + q[1:]
            used.update({(owner, pick), (owner, pick, month)})
            block: list[tuple[str, str, Question | None]] = []
            if fact.setup:
                block.append((other, fact.setup, None))
            question = Question(q, "", fact.kind, owner, question_type(q), fact=pick)
            block.append((owner, fact.fact, question))
            block.append((r.choice(people), r.choice(SMALL_TALK), None))
            pos = r.randint(0, len(script))
            script[pos:pos] = block
        turns: list[Turn] = []
        clock = at
        for i, (who, line, question) in enumerate(script):
            clock += timedelta(minutes=r.randint(1, 4))  # strictly increasing: sentAt order is the turn order
            turn = Turn(f"{sid}-t{i:03d}", sid, who, line, clock)
            turns.append(turn)
            if question is not None:
                question.answer = turn.id
                pending.append(question)
        out.sessions[sid] = turns
    seen: set[str] = set()
    r.shuffle(pending)
    for q in pending:  # one question per distinct wording: each has exactly one answer
        if q.text.casefold() in seen:
            continue
        seen.add(q.text.casefold())
        out.questions.append(q)
        if len(out.questions) >= questions:
            break
    out.questions += multi_hop_questions(seed, out, pending, multi_hop)
    return out


def multi_hop_questions(seed: int, data: ConversationSet, planted: list[Question], n: int) -> list[Question]:
    """Up to ``n`` questions over two planted facts in two sessions (half comparing two people, half
    ordering two facts of one person), from a random stream of their own."""
    r = random.Random(f"multi-hop {seed}")
    at = {t.id: t.at for t in data.turns}
    session = {t.id: t.session for t in data.turns}
    count: dict[tuple[str, int], int] = {}
    for q in planted:
        count[(q.owner, q.fact)] = count.get((q.owner, q.fact), 0) + 1
    once = {(q.owner, q.fact): q for q in planted if count[(q.owner, q.fact)] == 1}
    pairs: list[tuple[Question, Question, str]] = []
    for fact, wording in COMPARE.items():
        owners = sorted(o for o, f in once if f == fact)
        for i, a in enumerate(owners):
            for b in owners[i + 1:]:
                qa, qb = once[(a, fact)], once[(b, fact)]
                if session[qa.answer] != session[qb.answer]:
                    first, second = r.sample([qa, qb], 2)
                    pairs.append((first, second, wording.format(a=first.owner, b=second.owner)))
    ordered: list[tuple[Question, Question, str]] = []
    for owner in sorted({o for o, _ in once}):
        facts = sorted(f for o, f in once if o == owner and f in EVENTS)
        for i, fa in enumerate(facts):
            for fb in facts[i + 1:]:
                qa, qb = once[(owner, fa)], once[(owner, fb)]
                if session[qa.answer] != session[qb.answer] and at[qa.answer].date() != at[qb.answer].date():
                    first, second = r.sample([qa, qb], 2)
                    ordered.append((first, second, f"Which came first for {owner}: {EVENTS[first.fact]} "
                                                   f"or {EVENTS[second.fact]}?"))
    r.shuffle(pairs)
    r.shuffle(ordered)
    half = min(len(ordered), n // 2)
    chosen = ordered[:half] + pairs[:n - half]
    return [Question(text, a.answer, "multi-hop", a.owner, "multi-hop", also=(b.answer,))
            for a, b, text in chosen]
