"""Words that carry no information in a search: question words, articles, pronouns,
auxiliaries and prepositions. A query's stopwords do not decide which pages match; they
only help rank (in phrases). Kept lowercase and without diacritics, as words are
compared after folding. Words that are stopwords in one language and content words in
another (English "son", "die", "plus") are left out.
"""

from __future__ import annotations


def _words(text: str) -> list[str]:
    return text.split()


ENGLISH = frozenset(
    _words(
        """
        a about above after again against all am an and any are as at be because been before
        being below between both but by can could did do does doing done down during each few
        for from further get got had has have having he her here hers herself him himself his
        how i if in into is it its itself just me more most my myself no nor not of off on once
        only or other our ours ourselves out over own same she should so some such than that the
        their theirs them themselves then there these they this those through to too under until
        up very was we were what when where which while who whom whose why will with would you
        your yours yourself yourselves let lets s t don doesn didn isn aren wasn weren can
        cannot shall may might must also anyway please without within via onto upon among
        """
    )
)
FRENCH = frozenset(
    _words(
        """
        le la les l un une des de du d et ou a au aux en dans sur pour par avec sans sous ce cet
        cette ces c qui que qu quoi quel quelle quels quelles comment pourquoi quand est sont
        etre ai as avons avez ont je j tu il elle nous vous ils elles on se s ne n pas mon ma
        mes ton ta tes sa ses notre nos votre vos leur leurs y me m te lui peut puis faut fait
        faire comme si tres
        """
    )
)
GERMAN = frozenset(
    _words(
        """
        der das den dem des ein eine einen einem einer eines und oder aber zu zum zur im in am
        an auf aus mit fur von vom bei nach uber wie was wo wann warum wer wen wem welche
        welcher welches ist sind bin bist war waren sein hat haben habe kann konnen muss ich du
        er sie es wir ihr nicht kein keine mein meine dein deine sich auch noch nur wenn dass ob
        """
    )
)
SPANISH = frozenset(
    _words(
        """
        el la los las un una unos unas de del y o u a al en con por para que como donde cuando
        cual cuales quien quienes porque es esta estan ser estar hay yo tu nosotros ellos ellas
        se lo le les mi mis su sus no si mas muy puedo puede hacer
        """
    )
)
LATIN = ENGLISH | FRENCH | GERMAN | SPANISH

# Chinese and Japanese: question words, particles and verb endings, found inside runs
# of characters (there are no spaces to split at). Single characters are only those
# that seldom start or end a word.
CJK = frozenset(
    _words(
        """
        如何 怎么 怎样 怎么样 什么 为什么 哪里 哪儿 哪个 哪些 是否 可以 能否 请问
        一下 的 了 吗 呢 吧 么
        どう どうやって どのように なぜ 何 なに どこ いつ する します した して
        される できる できます ですか です ます ください 方法
        の を に は が で と も へ や か
        """
    )
)
CJK_LONGEST_FIRST = tuple(sorted(CJK, key=len, reverse=True))
