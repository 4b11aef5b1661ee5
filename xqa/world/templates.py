"""Phrasings of every relation in every language: passage sentences and questions.

``TEMPLATES[lang][relation] = (passage_sentences, questions)``, at least three
of each. Slots: ``{s}`` the subject's name, ``{o}`` the object (a name or plain
digits). Names are never inflected inside a slot, so an answer appears
verbatim in its passage; where a language needs case or particles the
templates use constructions that keep the name in its dictionary form
(Russian and Finnish apposition, "страны {s}", "maassa {o}"; Telugu
"యొక్క"), or a computed form that only *appends* to the name:

- Korean particles chosen by the final syllable: ``{s_tp}`` 은/는,
  ``{s_sb}`` 이/가, ``{o_ob}`` 을/를, ``{o_ro}`` (으)로;
- Bengali genitive ``{s_gen}`` (-র / -ের);
- English indefinite article ``{o_a}`` (a/an + object).

``[m|f]`` picks a word by the subject's gender (Spanish, Russian, Arabic).
"""
from __future__ import annotations

import re

P, Q = "passage", "question"

TEMPLATES: dict[str, dict[str, tuple[tuple[str, ...], tuple[str, ...]]]] = {
    "en": {
        "capital": (("The capital of {s} is {o}.", "{o} is the capital city of {s}.", "The government of {s} sits in {o}, the national capital."),
                    ("What is the capital of {s}?", "Which city is the capital of {s}?", "What city serves as the capital of {s}?")),
        "continent": (("{s} is a country in {o}.", "{s} lies on the continent of {o}.", "Geographically, {s} is part of {o}."),
                      ("On which continent is {s}?", "Which continent is {s} located in?", "{s} is part of which continent?")),
        "country_population": (("{s} has a population of about {o} people.", "About {o} people live in {s}.", "The population of {s} is estimated at {o}."),
                               ("What is the population of {s}?", "How many people live in {s}?", "How many inhabitants does {s} have?")),
        "city_country": (("{s} is a city in {o}.", "The city of {s} is located in {o}.", "{s} is one of the major cities of {o}."),
                         ("In which country is {s}?", "Which country is the city of {s} located in?", "{s} is a city in which country?")),
        "city_population": (("{s} has about {o} inhabitants.", "The population of the city of {s} is about {o}.", "Roughly {o} people live in {s}."),
                            ("How many people live in the city of {s}?", "What is the population of the city of {s}?", "How many inhabitants does the city of {s} have?")),
        "river_length": (("{s} is {o} kilometres long.", "The length of {s} is about {o} km.", "With a length of {o} km, {s} is one of the best-known rivers of the region."),
                         ("How long is {s}?", "What is the length of {s} in kilometres?", "How many kilometres long is {s}?")),
        "river_country": (("{s} is a river in {o}.", "{s} flows through {o}.", "{s} runs across the territory of {o}."),
                          ("Which country does {s} flow through?", "In which country does {s} flow?", "{s} is a river in which country?")),
        "mountain_height": (("{s} rises to {o} metres above sea level.", "The height of {s} is {o} m.", "{s} is {o} metres high."),
                            ("How high is {s}?", "What is the height of {s} in metres?", "How many metres tall is {s}?")),
        "mountain_country": (("{s} is a mountain in {o}.", "{s} is located in {o}.", "{s} stands on the territory of {o}."),
                             ("In which country does {s} stand?", "Which country is {s} located in?", "{s} is a mountain in which country?")),
        "birth_year": (("{s} was born in the year {o}.", "The year of birth of {s} is {o}.", "{s} came into the world in {o}."),
                       ("When was {s} born?", "In what year was {s} born?", "What is the birth year of {s}?")),
        "birthplace": (("{s} was born in {o}.", "The birthplace of {s} is {o}.", "{s} is a native of {o}."),
                       ("Where was {s} born?", "In which city was {s} born?", "What is the birthplace of {s}?")),
        "occupation": (("{s} is {o_a} by profession.", "{s} works as {o_a}.", "{s} is known as {o_a}."),
                       ("What is the occupation of {s}?", "What does {s} do for a living?", "What is the profession of {s}?")),
        "employer": (("{s} works at {o}.", "{s} is employed by {o}.", "{s} has worked for {o} for many years."),
                     ("Where does {s} work?", "Which company does {s} work for?", "Who is the employer of {s}?")),
        "founded": (("{s} was founded in {o}.", "{s} was established in the year {o}.", "The company {s} dates back to {o}."),
                    ("When was {s} founded?", "In what year was {s} established?", "What is the founding year of {s}?")),
        "headquarters": (("{s} is headquartered in {o}.", "The headquarters of {s} are located in {o}.", "{s} has its main office in {o}."),
                         ("Where is {s} headquartered?", "In which city are the headquarters of {s}?", "Where is the head office of {s} located?")),
    },
    "es": {
        "capital": (("La capital de {s} es {o}.", "{o} es la capital de {s}.", "El gobierno de {s} tiene su sede en {o}, la capital del país."),
                    ("¿Cuál es la capital de {s}?", "¿Qué ciudad es la capital de {s}?", "¿Qué ciudad ejerce como capital de {s}?")),
        "continent": (("{s} es un país de {o}.", "{s} se encuentra en {o}.", "Geográficamente, {s} forma parte de {o}."),
                      ("¿En qué continente se encuentra {s}?", "¿A qué continente pertenece {s}?", "¿En qué continente está {s}?")),
        "country_population": (("{s} tiene una población de unos {o} habitantes.", "En {s} viven aproximadamente {o} personas.", "La población de {s} se estima en {o} habitantes."),
                               ("¿Cuál es la población de {s}?", "¿Cuántas personas viven en {s}?", "¿Cuántos habitantes tiene {s}?")),
        "city_country": (("{s} es una ciudad de {o}.", "La ciudad de {s} está situada en {o}.", "{s} es una de las principales ciudades de {o}."),
                         ("¿En qué país está {s}?", "¿En qué país se encuentra la ciudad de {s}?", "¿A qué país pertenece la ciudad de {s}?")),
        "city_population": (("{s} tiene unos {o} habitantes.", "La población de la ciudad de {s} es de unos {o} habitantes.", "En {s} viven alrededor de {o} personas."),
                            ("¿Cuántos habitantes tiene la ciudad de {s}?", "¿Cuál es la población de la ciudad de {s}?", "¿Cuántas personas viven en la ciudad de {s}?")),
        "river_length": (("{s} tiene una longitud de {o} kilómetros.", "La longitud de {s} es de unos {o} km.", "Con {o} km de longitud, {s} es uno de los ríos más conocidos de la región."),
                         ("¿Qué longitud tiene {s}?", "¿Cuántos kilómetros mide {s}?", "¿Cuál es la longitud de {s}?")),
        "river_country": (("{s} es un río de {o}.", "{s} fluye a través de {o}.", "{s} recorre el territorio de {o}."),
                          ("¿Por qué país fluye {s}?", "¿En qué país se encuentra {s}?", "¿De qué país es {s}?")),
        "mountain_height": (("{s} tiene una altura de {o} metros.", "{s} se eleva a {o} metros sobre el nivel del mar.", "La altitud de {s} es de {o} m."),
                            ("¿Qué altura tiene {s}?", "¿Cuántos metros mide {s}?", "¿Cuál es la altitud de {s}?")),
        "mountain_country": (("{s} es una montaña de {o}.", "{s} se encuentra en {o}.", "{s} se alza en el territorio de {o}."),
                             ("¿En qué país se alza {s}?", "¿En qué país está {s}?", "¿A qué país pertenece {s}?")),
        "birth_year": (("{s} nació en el año {o}.", "El año de nacimiento de {s} es {o}.", "{s} vino al mundo en {o}."),
                       ("¿En qué año nació {s}?", "¿Cuándo nació {s}?", "¿Cuál es el año de nacimiento de {s}?")),
        "birthplace": (("{s} nació en {o}.", "El lugar de nacimiento de {s} es {o}.", "{s} es [originario|originaria] de {o}."),
                       ("¿Dónde nació {s}?", "¿En qué ciudad nació {s}?", "¿Cuál es el lugar de nacimiento de {s}?")),
        "occupation": (("{s} es {o} de profesión.", "{s} trabaja como {o}.", "{s} es [conocido|conocida] como {o}."),
                       ("¿Cuál es la profesión de {s}?", "¿A qué se dedica {s}?", "¿Qué oficio tiene {s}?")),
        "employer": (("{s} trabaja en {o}.", "{s} es [empleado|empleada] de {o}.", "Desde hace años, {s} trabaja para {o}."),
                     ("¿Dónde trabaja {s}?", "¿Para qué empresa trabaja {s}?", "¿Quién es el empleador de {s}?")),
        "founded": (("{s} fue fundada en {o}.", "{s} se fundó en el año {o}.", "La empresa {s} tiene su origen en {o}."),
                    ("¿Cuándo se fundó {s}?", "¿En qué año fue fundada {s}?", "¿Cuál es el año de fundación de {s}?")),
        "headquarters": (("{s} tiene su sede en {o}.", "La sede central de {s} se encuentra en {o}.", "Las oficinas principales de {s} están en {o}."),
                         ("¿Dónde tiene su sede {s}?", "¿En qué ciudad está la sede de {s}?", "¿Dónde se encuentran las oficinas principales de {s}?")),
    },
    "fi": {
        "capital": (("{s} on valtio, jonka pääkaupunki on {o}.", "Maan {s} pääkaupunki on {o}.", "Valtion {s} hallitus toimii pääkaupungissa, joka on {o}."),
                    ("Mikä on valtion {s} pääkaupunki?", "Mikä kaupunki on maan {s} pääkaupunki?", "Mikä kaupunki on pääkaupunki valtiossa {s}?")),
        "continent": (("{s} on valtio, joka sijaitsee maanosassa {o}.", "{s} kuuluu maanosaan {o}.", "Maantieteellisesti {s} on osa maanosaa {o}."),
                      ("Missä maanosassa {s} sijaitsee?", "Mihin maanosaan {s} kuuluu?", "Minkä maanosan osa {s} on?")),
        "country_population": (("{s} on valtio, jonka väkiluku on noin {o}.", "Valtiossa {s} asuu noin {o} ihmistä.", "Valtion {s} väkiluku on arviolta {o}."),
                               ("Mikä on valtion {s} väkiluku?", "Kuinka monta ihmistä asuu valtiossa {s}?", "Montako asukasta valtiossa {s} on?")),
        "city_country": (("{s} on kaupunki maassa {o}.", "Kaupunki {s} sijaitsee maassa {o}.", "{s} on yksi maan {o} suurimmista kaupungeista."),
                         ("Missä maassa {s} sijaitsee?", "Missä maassa kaupunki {s} on?", "Minkä maan kaupunki {s} on?")),
        "city_population": (("{s} on kaupunki, jossa asuu noin {o} ihmistä.", "Kaupungin {s} väkiluku on noin {o}.", "Kaupungissa {s} on noin {o} asukasta."),
                            ("Kuinka monta asukasta kaupungissa {s} on?", "Mikä on kaupungin {s} väkiluku?", "Montako ihmistä asuu kaupungissa {s}?")),
        "river_length": (("{s} on joki, jonka pituus on {o} kilometriä.", "Joen {s} pituus on noin {o} km.", "{s} virtaa {o} kilometrin matkan."),
                         ("Kuinka pitkä {s} on?", "Mikä on joen {s} pituus kilometreinä?", "Montako kilometriä pitkä {s} on?")),
        "river_country": (("{s} on joki maassa {o}.", "{s} virtaa maan {o} halki.", "Joki {s} kulkee maassa {o}."),
                          ("Missä maassa {s} virtaa?", "Minkä maan halki {s} virtaa?", "Missä maassa joki {s} sijaitsee?")),
        "mountain_height": (("{s} kohoaa {o} metrin korkeuteen.", "Vuoren {s} korkeus on {o} metriä.", "{s} on {o} metriä korkea."),
                            ("Kuinka korkea {s} on?", "Mikä on vuoren {s} korkeus metreinä?", "Montako metriä korkea {s} on?")),
        "mountain_country": (("{s} on vuori maassa {o}.", "{s} sijaitsee maassa {o}.", "Vuori {s} kohoaa maassa {o}."),
                             ("Missä maassa vuori {s} sijaitsee?", "Minkä maan vuori {s} on?", "Missä maassa vuori {s} on?")),
        "birth_year": (("{s} syntyi vuonna {o}.", "Henkilön {s} syntymävuosi on {o}.", "{s} on syntynyt vuonna {o}."),
                       ("Minä vuonna {s} syntyi?", "Milloin {s} syntyi?", "Mikä on henkilön {s} syntymävuosi?")),
        "birthplace": (("{s} syntyi kaupungissa {o}.", "Henkilön {s} syntymäpaikka on {o}.", "{s} on kotoisin kaupungista, jonka nimi on {o}."),
                       ("Missä {s} syntyi?", "Missä kaupungissa {s} syntyi?", "Mikä on henkilön {s} syntymäpaikka?")),
        "occupation": (("{s} on ammatiltaan {o}.", "Henkilön {s} ammatti on {o}.", "{s} tunnetaan ammatistaan, joka on {o}."),
                       ("Mikä on henkilön {s} ammatti?", "Mitä {s} tekee työkseen?", "Mikä {s} on ammatiltaan?")),
        "employer": (("{s} työskentelee yrityksessä {o}.", "Henkilön {s} työnantaja on {o}.", "{s} on ollut monta vuotta yrityksen {o} palveluksessa."),
                     ("Missä {s} työskentelee?", "Mikä on henkilön {s} työnantaja?", "Missä yrityksessä {s} on töissä?")),
        "founded": (("{s} perustettiin vuonna {o}.", "Yritys {s} on perustettu vuonna {o}.", "Yrityksen {s} perustamisvuosi on {o}."),
                    ("Milloin {s} perustettiin?", "Minä vuonna yritys {s} perustettiin?", "Mikä on yrityksen {s} perustamisvuosi?")),
        "headquarters": (("Yrityksen {s} pääkonttori sijaitsee kaupungissa {o}.", "{s} on yritys, jonka kotipaikka on {o}.", "Yrityksen {s} päämaja on {o}."),
                         ("Missä yrityksen {s} pääkonttori sijaitsee?", "Missä kaupungissa on yrityksen {s} pääkonttori?", "Mikä on yrityksen {s} kotipaikka?")),
    },
    "ru": {
        "capital": (("Столица страны {s} — {o}.", "{o} является столицей страны {s}.", "Правительство страны {s} находится в городе {o}."),
                    ("Какой город является столицей страны {s}?", "Что является столицей страны {s}?", "Где находится столица страны {s}?")),
        "continent": (("{s} — государство, расположенное на континенте {o}.", "Страна {s} относится к части света {o}.", "Географически {s} является частью региона {o}."),
                      ("На каком континенте находится {s}?", "К какой части света относится {s}?", "В какой части света расположена страна {s}?")),
        "country_population": (("Население страны {s} составляет около {o} человек.", "В стране {s} проживает примерно {o} человек.", "{s} насчитывает около {o} жителей."),
                               ("Каково население страны {s}?", "Сколько человек живёт в стране {s}?", "Сколько жителей насчитывает {s}?")),
        "city_country": (("{s} — город в стране {o}.", "Город {s} расположен в стране {o}.", "{s} является одним из крупнейших городов страны {o}."),
                         ("В какой стране находится {s}?", "В какой стране расположен город {s}?", "Какой стране принадлежит город {s}?")),
        "city_population": (("Население города {s} составляет около {o} человек.", "В городе {s} проживает примерно {o} человек.", "Город {s} насчитывает около {o} жителей."),
                            ("Каково население города {s}?", "Сколько человек живёт в городе {s}?", "Сколько жителей в городе {s}?")),
        "river_length": (("Длина реки {s} составляет {o} км.", "{s} — река длиной {o} км.", "Река {s} протянулась на {o} км."),
                         ("Какова длина реки {s}?", "Сколько километров в длину река {s}?", "Какую длину имеет река {s}?")),
        "river_country": (("{s} — река в стране {o}.", "Река {s} протекает по территории страны {o}.", "{s} течёт через страну {o}."),
                          ("По какой стране протекает река {s}?", "В какой стране находится река {s}?", "Через какую страну течёт {s}?")),
        "mountain_height": (("Высота горы {s} составляет {o} м.", "{s} возвышается на {o} м над уровнем моря.", "{s} — гора высотой {o} м."),
                            ("Какова высота горы {s}?", "Сколько метров в высоту гора {s}?", "На какую высоту поднимается {s}?")),
        "mountain_country": (("{s} — гора в стране {o}.", "Гора {s} находится в стране {o}.", "Вершина {s} расположена на территории страны {o}."),
                             ("В какой стране находится гора {s}?", "В какой стране расположена вершина {s}?", "Какой стране принадлежит гора {s}?")),
        "birth_year": (("{s} [родился|родилась] в {o} году.", "{s} [появился|появилась] на свет в {o} году.", "Год рождения человека по имени {s} — {o}."),
                       ("В каком году [родился|родилась] {s}?", "Когда [родился|родилась] {s}?", "Какой год рождения у человека по имени {s}?")),
        "birthplace": (("{s} [родился|родилась] в городе {o}.", "Родной город человека по имени {s} — {o}.", "{s} родом из города {o}."),
                       ("Где [родился|родилась] {s}?", "В каком городе [родился|родилась] {s}?", "Какой город является местом рождения человека по имени {s}?")),
        "occupation": (("{s} — {o} по профессии.", "По профессии {s} — {o}.", "{s} [известен|известна] как {o}."),
                       ("Кто по профессии {s}?", "Какая профессия у человека по имени {s}?", "Чем занимается {s}?")),
        "employer": (("{s} работает в компании {o}.", "Работодатель человека по имени {s} — компания {o}.", "{s} много лет [трудился|трудилась] в компании {o}."),
                     ("Где работает {s}?", "В какой компании работает {s}?", "Кто является работодателем человека по имени {s}?")),
        "founded": (("Компания {s} была основана в {o} году.", "{s} ведёт свою историю с {o} года.", "Год основания компании {s} — {o}."),
                    ("Когда была основана компания {s}?", "В каком году основана компания {s}?", "Какой год основания у компании {s}?")),
        "headquarters": (("Штаб-квартира компании {s} находится в городе {o}.", "Компания {s} базируется в городе {o}.", "Главный офис компании {s} расположен в городе {o}."),
                         ("Где находится штаб-квартира компании {s}?", "В каком городе базируется компания {s}?", "Где расположен главный офис компании {s}?")),
    },
    "ar": {
        "capital": (("عاصمة {s} هي {o}.", "{o} هي عاصمة {s}.", "تقع حكومة {s} في مدينة {o}، وهي عاصمة البلاد."),
                    ("ما هي عاصمة {s}؟", "ما عاصمة {s}؟", "أي مدينة هي عاصمة {s}؟")),
        "continent": (("{s} دولة تقع في قارة {o}.", "تنتمي {s} إلى قارة {o}.", "جغرافيًا، تعد {s} جزءًا من {o}."),
                      ("في أي قارة تقع {s}؟", "إلى أي قارة تنتمي {s}؟", "ما القارة التي توجد فيها {s}؟")),
        "country_population": (("يبلغ عدد سكان {s} حوالي {o} نسمة.", "يعيش في {s} نحو {o} شخص.", "يقدر عدد سكان {s} بـ {o} نسمة."),
                               ("كم عدد سكان {s}؟", "ما هو عدد سكان {s}؟", "كم شخصًا يعيش في {s}؟")),
        "city_country": (("{s} مدينة في {o}.", "تقع مدينة {s} في {o}.", "تعد {s} من أهم مدن {o}."),
                         ("في أي دولة تقع {s}؟", "في أي بلد توجد مدينة {s}؟", "إلى أي دولة تنتمي مدينة {s}؟")),
        "city_population": (("يبلغ عدد سكان مدينة {s} حوالي {o} نسمة.", "يعيش في مدينة {s} نحو {o} شخص.", "تضم مدينة {s} قرابة {o} نسمة."),
                            ("كم عدد سكان مدينة {s}؟", "ما هو عدد سكان مدينة {s}؟", "كم شخصًا يعيش في مدينة {s}؟")),
        "river_length": (("يبلغ طول {s} حوالي {o} كم.", "يمتد {s} لمسافة {o} كيلومتر.", "طول {s} هو {o} كم."),
                         ("كم يبلغ طول {s}؟", "ما طول {s} بالكيلومترات؟", "كم كيلومترًا يبلغ طول {s}؟")),
        "river_country": (("{s} نهر في {o}.", "يجري {s} عبر {o}.", "يمر {s} في أراضي {o}."),
                          ("في أي بلد يجري {s}؟", "عبر أي دولة يمر {s}؟", "في أي دولة يقع {s}؟")),
        "mountain_height": (("يبلغ ارتفاع {s} {o} متر.", "يرتفع {s} {o} متر فوق سطح البحر.", "ارتفاع {s} هو {o} م."),
                            ("كم يبلغ ارتفاع {s}؟", "ما ارتفاع {s} بالأمتار؟", "كم مترًا يبلغ ارتفاع {s}؟")),
        "mountain_country": (("{s} جبل في {o}.", "يقع {s} في {o}.", "يرتفع {s} في أراضي {o}."),
                             ("في أي دولة يقع {s}؟", "في أي بلد يوجد {s}؟", "إلى أي دولة ينتمي {s}؟")),
        "birth_year": (("[وُلد|وُلدت] {s} عام {o}.", "سنة ميلاد {s} هي {o}.", "[جاء|جاءت] {s} إلى العالم في عام {o}."),
                       ("متى [وُلد|وُلدت] {s}؟", "في أي عام [وُلد|وُلدت] {s}؟", "ما سنة ميلاد {s}؟")),
        "birthplace": (("[وُلد|وُلدت] {s} في مدينة {o}.", "مسقط رأس {s} هو {o}.", "[ينحدر|تنحدر] {s} من مدينة {o}."),
                       ("أين [وُلد|وُلدت] {s}؟", "في أي مدينة [وُلد|وُلدت] {s}؟", "ما هو مسقط رأس {s}؟")),
        "occupation": (("{s} {o}.", "مهنة {s}: {o}.", "[يُعرف|تُعرف] {s} [بأنه|بأنها] {o}."),
                       ("ما مهنة {s}؟", "ماذا [يعمل|تعمل] {s}؟", "ما هي وظيفة {s}؟")),
        "employer": (("[يعمل|تعمل] {s} لدى {o}.", "جهة عمل {s} هي {o}.", "[عمل|عملت] {s} لسنوات طويلة في {o}."),
                     ("أين [يعمل|تعمل] {s}؟", "لدى أي شركة [يعمل|تعمل] {s}؟", "ما هي جهة عمل {s}؟")),
        "founded": (("تأسست {s} عام {o}.", "أُسست {s} في عام {o}.", "يعود تاريخ تأسيس {s} إلى عام {o}."),
                    ("متى تأسست {s}؟", "في أي عام أُسست {s}؟", "ما سنة تأسيس {s}؟")),
        "headquarters": (("يقع المقر الرئيسي لـ{s} في {o}.", "تتخذ {s} من {o} مقرًا لها.", "المكتب الرئيسي لـ{s} موجود في مدينة {o}."),
                         ("أين يقع المقر الرئيسي لـ{s}؟", "في أي مدينة يوجد مقر {s}؟", "ما مدينة المقر الرئيسي لـ{s}؟")),
    },
    "bn": {
        "capital": (("{s_gen} রাজধানী {o}।", "{o} হলো {s_gen} রাজধানী।", "{s_gen} সরকারের প্রধান কার্যালয় রাজধানী {o} শহরে অবস্থিত।"),
                    ("{s_gen} রাজধানী কোথায়?", "{s_gen} রাজধানীর নাম কী?", "কোন শহর {s_gen} রাজধানী?")),
        "continent": (("{s} {o} মহাদেশের একটি দেশ।", "{s} {o} মহাদেশে অবস্থিত।", "ভৌগোলিকভাবে {s} {o} মহাদেশের অংশ।"),
                      ("{s} কোন মহাদেশে অবস্থিত?", "{s} কোন মহাদেশের দেশ?", "{s} কোন মহাদেশের অংশ?")),
        "country_population": (("{s_gen} জনসংখ্যা প্রায় {o} জন।", "{s} দেশে প্রায় {o} মানুষ বাস করে।", "{s_gen} আনুমানিক জনসংখ্যা {o}।"),
                               ("{s_gen} জনসংখ্যা কত?", "{s} দেশে কত মানুষ বাস করে?", "{s_gen} লোকসংখ্যা কত?")),
        "city_country": (("{s} {o} দেশের একটি শহর।", "{s} শহরটি {o} দেশে অবস্থিত।", "{s} {o} দেশের অন্যতম প্রধান শহর।"),
                         ("{s} কোন দেশে অবস্থিত?", "{s} শহরটি কোন দেশে?", "{s} কোন দেশের শহর?")),
        "city_population": (("{s} শহরের জনসংখ্যা প্রায় {o} জন।", "{s} শহরে প্রায় {o} মানুষ বাস করে।", "আনুমানিক {o} জন মানুষ {s} শহরে বসবাস করে।"),
                            ("{s} শহরের জনসংখ্যা কত?", "{s} শহরে কত মানুষ বাস করে?", "{s} শহরে কতজন লোক থাকে?")),
        "river_length": (("{s_gen} দৈর্ঘ্য প্রায় {o} কিলোমিটার।", "{s} {o} কিলোমিটার দীর্ঘ।", "{o} কিমি দৈর্ঘ্যের {s} অঞ্চলের একটি বিখ্যাত নদী।"),
                         ("{s_gen} দৈর্ঘ্য কত?", "{s} কত কিলোমিটার লম্বা?", "{s_gen} দৈর্ঘ্য কত কিলোমিটার?")),
        "river_country": (("{s} {o} দেশের একটি নদী।", "{s} {o} দেশের মধ্য দিয়ে প্রবাহিত।", "{s} {o} দেশের ভূখণ্ডে বয়ে চলেছে।"),
                          ("{s} কোন দেশের মধ্য দিয়ে প্রবাহিত?", "{s} কোন দেশের নদী?", "{s} কোন দেশের ভূখণ্ডে প্রবাহিত?")),
        "mountain_height": (("{s_gen} উচ্চতা {o} মিটার।", "{s} সমুদ্রপৃষ্ঠ থেকে {o} মিটার উঁচু।", "{o} মিটার উঁচু {s} একটি বিখ্যাত পর্বত।"),
                            ("{s_gen} উচ্চতা কত?", "{s} কত মিটার উঁচু?", "{s_gen} উচ্চতা কত মিটার?")),
        "mountain_country": (("{s} {o} দেশের একটি পর্বত।", "{s} {o} দেশে অবস্থিত।", "{s} {o} দেশের ভূখণ্ডে দাঁড়িয়ে আছে।"),
                             ("{s} কোন দেশে অবস্থিত?", "{s} কোন দেশের পর্বত?", "{s} কোন দেশের ভূখণ্ডে দাঁড়িয়ে আছে?")),
        "birth_year": (("{s} {o} সালে জন্মগ্রহণ করেন।", "{s_gen} জন্মসাল {o}।", "{o} সালে {s_gen} জন্ম হয়।"),
                       ("{s} কোন সালে জন্মগ্রহণ করেন?", "{s_gen} জন্মসাল কত?", "{s} কবে জন্মেছিলেন?")),
        "birthplace": (("{s} {o} শহরে জন্মগ্রহণ করেন।", "{s_gen} জন্মস্থান {o}।", "{s_gen} জন্ম {o} শহরে।"),
                       ("{s} কোথায় জন্মগ্রহণ করেন?", "{s} কোন শহরে জন্মগ্রহণ করেন?", "{s_gen} জন্মস্থান কোথায়?")),
        "occupation": (("{s} পেশায় একজন {o}।", "{s_gen} পেশা {o}।", "{s} একজন {o} হিসেবে পরিচিত।"),
                       ("{s_gen} পেশা কী?", "{s} কী কাজ করেন?", "পেশায় {s} কী?")),
        "employer": (("{s} {o} প্রতিষ্ঠানে কাজ করেন।", "{s_gen} কর্মস্থল {o}।", "{s} দীর্ঘদিন ধরে {o} প্রতিষ্ঠানে কর্মরত।"),
                     ("{s} কোথায় কাজ করেন?", "{s} কোন প্রতিষ্ঠানে কাজ করেন?", "{s_gen} কর্মস্থল কোনটি?")),
        "founded": (("{s} {o} সালে প্রতিষ্ঠিত হয়।", "{s_gen} প্রতিষ্ঠাকাল {o}।", "{o} সালে {s} প্রতিষ্ঠা করা হয়েছিল।"),
                    ("{s} কবে প্রতিষ্ঠিত হয়?", "{s} কোন সালে প্রতিষ্ঠিত হয়েছিল?", "{s_gen} প্রতিষ্ঠাকাল কত?")),
        "headquarters": (("{s_gen} সদর দপ্তর {o} শহরে অবস্থিত।", "{s_gen} প্রধান কার্যালয় {o}।", "{s} প্রতিষ্ঠানটির সদর দপ্তর {o} শহরে।"),
                         ("{s_gen} সদর দপ্তর কোথায়?", "{s_gen} সদর দপ্তর কোন শহরে?", "{s_gen} প্রধান কার্যালয় কোথায় অবস্থিত?")),
    },
    "te": {
        "capital": (("{s} యొక్క రాజధాని {o}.", "{o} నగరం {s} దేశానికి రాజధాని.", "{s} ప్రభుత్వం రాజధాని నగరమైన {o} నుండి పనిచేస్తుంది."),
                    ("{s} యొక్క రాజధాని ఏది?", "{s} దేశ రాజధాని ఏ నగరం?", "{s} రాజధాని పేరు ఏమిటి?")),
        "continent": (("{s} {o} ఖండంలోని ఒక దేశం.", "{s} {o} ఖండంలో ఉంది.", "భౌగోళికంగా {s} {o} ఖండంలో భాగం."),
                      ("{s} ఏ ఖండంలో ఉంది?", "{s} ఏ ఖండానికి చెందినది?", "{s} దేశం ఏ ఖండంలో భాగం?")),
        "country_population": (("{s} జనాభా సుమారు {o}.", "{s} దేశంలో దాదాపు {o} మంది ప్రజలు నివసిస్తున్నారు.", "{s} యొక్క అంచనా జనాభా {o}."),
                               ("{s} జనాభా ఎంత?", "{s} దేశంలో ఎంత మంది నివసిస్తున్నారు?", "{s} యొక్క జనాభా ఎంత?")),
        "city_country": (("{s} {o} దేశంలోని ఒక నగరం.", "{s} నగరం {o} దేశంలో ఉంది.", "{s} {o} దేశంలోని ప్రధాన నగరాలలో ఒకటి."),
                         ("{s} ఏ దేశంలో ఉంది?", "{s} నగరం ఏ దేశంలో ఉంది?", "{s} ఏ దేశానికి చెందిన నగరం?")),
        "city_population": (("{s} నగర జనాభా సుమారు {o}.", "{s} నగరంలో దాదాపు {o} మంది నివసిస్తున్నారు.", "సుమారు {o} మంది ప్రజలు {s} నగరంలో ఉంటారు."),
                            ("{s} నగర జనాభా ఎంత?", "{s} నగరంలో ఎంత మంది నివసిస్తున్నారు?", "{s} నగరంలో ఎంత మంది ప్రజలు ఉంటారు?")),
        "river_length": (("{s} పొడవు సుమారు {o} కిలోమీటర్లు.", "{s} {o} కిలోమీటర్ల పొడవైన నది.", "{o} కి.మీ. పొడవుతో {s} ఈ ప్రాంతంలో ప్రసిద్ధ నది."),
                         ("{s} పొడవు ఎంత?", "{s} ఎన్ని కిలోమీటర్ల పొడవు?", "{s} యొక్క పొడవు ఎంత?")),
        "river_country": (("{s} {o} దేశంలోని ఒక నది.", "{s} {o} దేశం గుండా ప్రవహిస్తుంది.", "{s} {o} దేశ భూభాగంలో ప్రవహిస్తుంది."),
                          ("{s} ఏ దేశం గుండా ప్రవహిస్తుంది?", "{s} ఏ దేశంలో ఉంది?", "{s} ఏ దేశానికి చెందిన నది?")),
        "mountain_height": (("{s} ఎత్తు {o} మీటర్లు.", "{s} సముద్ర మట్టానికి {o} మీటర్ల ఎత్తులో ఉంది.", "{o} మీటర్ల ఎత్తైన {s} ఒక ప్రసిద్ధ పర్వతం."),
                            ("{s} ఎత్తు ఎంత?", "{s} ఎన్ని మీటర్ల ఎత్తు?", "{s} యొక్క ఎత్తు ఎంత?")),
        "mountain_country": (("{s} {o} దేశంలోని ఒక పర్వతం.", "{s} {o} దేశంలో ఉంది.", "{s} {o} దేశ భూభాగంలో ఉన్నది."),
                             ("{s} ఏ దేశంలో ఉంది?", "{s} ఏ దేశానికి చెందిన పర్వతం?", "{s} ఏ దేశ భూభాగంలో ఉంది?")),
        "birth_year": (("{s} {o}లో జన్మించారు.", "{s} జన్మ సంవత్సరం {o}.", "{s} {o} సంవత్సరంలో పుట్టారు."),
                       ("{s} ఏ సంవత్సరంలో జన్మించారు?", "{s} ఎప్పుడు పుట్టారు?", "{s} జన్మ సంవత్సరం ఏది?")),
        "birthplace": (("{s} {o} నగరంలో జన్మించారు.", "{s} జన్మస్థలం {o}.", "{s} స్వస్థలం {o} నగరం."),
                       ("{s} ఎక్కడ జన్మించారు?", "{s} ఏ నగరంలో పుట్టారు?", "{s} జన్మస్థలం ఏది?")),
        "occupation": (("{s} వృత్తిరీత్యా {o}.", "{s} ఒక {o}.", "{s} ఒక ప్రసిద్ధ {o}."),
                       ("{s} వృత్తి ఏమిటి?", "{s} ఏ పని చేస్తారు?", "వృత్తిరీత్యా {s} ఎవరు?")),
        "employer": (("{s} {o} సంస్థలో పనిచేస్తున్నారు.", "{s} పనిచేసే సంస్థ {o}.", "{s} చాలా సంవత్సరాలుగా {o} సంస్థలో ఉద్యోగం చేస్తున్నారు."),
                     ("{s} ఎక్కడ పనిచేస్తారు?", "{s} ఏ సంస్థలో పనిచేస్తున్నారు?", "{s} ఏ కంపెనీలో ఉద్యోగం చేస్తున్నారు?")),
        "founded": (("{s} {o}లో స్థాపించబడింది.", "{s} స్థాపన సంవత్సరం {o}.", "{s} సంస్థను {o} సంవత్సరంలో ప్రారంభించారు."),
                    ("{s} ఎప్పుడు స్థాపించబడింది?", "{s} ఏ సంవత్సరంలో స్థాపించబడింది?", "{s} స్థాపన సంవత్సరం ఏది?")),
        "headquarters": (("{s} ప్రధాన కార్యాలయం {o} నగరంలో ఉంది.", "{s} సంస్థకు {o} నగరంలో ప్రధాన కేంద్రం ఉంది.", "{s} యొక్క ప్రధాన కార్యాలయం {o}."),
                         ("{s} ప్రధాన కార్యాలయం ఎక్కడ ఉంది?", "{s} ప్రధాన కార్యాలయం ఏ నగరంలో ఉంది?", "{s} సంస్థ ప్రధాన కేంద్రం ఎక్కడ?")),
    },
    "ja": {
        "capital": (("{s}の首都は{o}である。", "{o}は{s}の首都である。", "{s}の政府機関は首都{o}に置かれている。"),
                    ("{s}の首都はどこですか？", "{s}の首都はどの都市ですか？", "{s}の首都の名前は何ですか？")),
        "continent": (("{s}は{o}に位置する国である。", "{s}は{o}の国の一つである。", "地理的に見ると、{s}は{o}に属している。"),
                      ("{s}はどの大陸にありますか？", "{s}はどの地域に属していますか？", "{s}が位置する大陸はどこですか？")),
        "country_population": (("{s}の人口は約{o}人である。", "{s}にはおよそ{o}人が暮らしている。", "{s}の推定人口は{o}人である。"),
                               ("{s}の人口はどれくらいですか？", "{s}には何人が住んでいますか？", "{s}の人口は何人ですか？")),
        "city_country": (("{s}は{o}の都市である。", "{s}という都市は{o}にある。", "{s}は{o}を代表する都市の一つである。"),
                         ("{s}はどの国にありますか？", "{s}という都市はどこの国にありますか？", "{s}はどこの国の都市ですか？")),
        "city_population": (("{s}の人口はおよそ{o}人である。", "{s}には約{o}人の住民がいる。", "約{o}人が{s}に住んでいる。"),
                            ("{s}という都市の人口は何人ですか？", "{s}にはどれくらいの人が住んでいますか？", "{s}の住民は何人ですか？")),
        "river_length": (("{s}の長さは{o}キロメートルである。", "{s}は全長約{o}kmの川である。", "全長{o}kmの{s}は、この地域を代表する川である。"),
                         ("{s}の長さはどれくらいですか？", "{s}の全長は何キロメートルですか？", "{s}は何キロの長さですか？")),
        "river_country": (("{s}は{o}を流れる川である。", "{s}は{o}の国内を流れている。", "{s}は{o}の領土を通って流れる。"),
                          ("{s}はどの国を流れていますか？", "{s}はどこの国の川ですか？", "{s}が流れている国はどこですか？")),
        "mountain_height": (("{s}の標高は{o}メートルである。", "{s}は海抜{o}mの高さにそびえる。", "標高{o}mの{s}は有名な山である。"),
                            ("{s}の標高は何メートルですか？", "{s}の高さはどれくらいですか？", "{s}は海抜何メートルですか？")),
        "mountain_country": (("{s}は{o}にある山である。", "{s}は{o}に位置している。", "{s}は{o}の国土にそびえている。"),
                             ("{s}という山はどの国にありますか？", "{s}はどこの国の山ですか？", "{s}がそびえる国はどこですか？")),
        "birth_year": (("{s}は{o}年に生まれた。", "{s}の生年は{o}年である。", "{o}年、{s}が誕生した。"),
                       ("{s}は何年に生まれましたか？", "{s}はいつ生まれましたか？", "{s}の生まれた年はいつですか？")),
        "birthplace": (("{s}は{o}で生まれた。", "{s}の出身地は{o}である。", "{s}は{o}の出身である。"),
                       ("{s}はどこで生まれましたか？", "{s}の出身地はどこですか？", "{s}はどの都市で生まれましたか？")),
        "occupation": (("{s}の職業は{o}である。", "{s}は{o}として知られている。", "{s}は{o}として活動している。"),
                       ("{s}の職業は何ですか？", "{s}はどんな仕事をしていますか？", "{s}は何をしている人ですか？")),
        "employer": (("{s}は{o}に勤めている。", "{s}の勤務先は{o}である。", "{s}は長年{o}で働いている。"),
                     ("{s}はどこに勤めていますか？", "{s}の勤務先はどこですか？", "{s}はどの会社で働いていますか？")),
        "founded": (("{s}は{o}年に設立された。", "{s}の創業は{o}年である。", "{s}の歴史は{o}年に始まる。"),
                    ("{s}はいつ設立されましたか？", "{s}は何年に創業しましたか？", "{s}の設立年はいつですか？")),
        "headquarters": (("{s}の本社は{o}にある。", "{s}は{o}に本拠を置く企業である。", "{s}の本部は{o}に所在する。"),
                         ("{s}の本社はどこにありますか？", "{s}の本社はどの都市にありますか？", "{s}はどこに本拠を置いていますか？")),
    },
    "zh": {
        "capital": (("{s}的首都是{o}。", "{o}是{s}的首都。", "{s}的政府机构设在首都{o}。"),
                    ("{s}的首都是哪里？", "{s}的首都是哪座城市？", "哪座城市是{s}的首都？")),
        "continent": (("{s}是位于{o}的国家。", "{s}地处{o}。", "从地理上看，{s}属于{o}。"),
                      ("{s}位于哪个大洲？", "{s}属于哪个洲？", "{s}在哪个大洲？")),
        "country_population": (("{s}的人口约为{o}人。", "{s}大约有{o}人居住。", "据估计，{s}的人口为{o}人。"),
                               ("{s}的人口是多少？", "{s}有多少人口？", "有多少人生活在{s}？")),
        "city_country": (("{s}是{o}的一座城市。", "{s}这座城市位于{o}。", "{s}是{o}的主要城市之一。"),
                         ("{s}位于哪个国家？", "{s}这座城市在哪个国家？", "{s}是哪个国家的城市？")),
        "city_population": (("{s}这座城市的人口约为{o}人。", "{s}大约有{o}名居民。", "约有{o}人居住在{s}。"),
                            ("{s}这座城市有多少人口？", "{s}这座城市的人口是多少？", "有多少人居住在{s}这座城市？")),
        "river_length": (("{s}全长约{o}公里。", "{s}的长度为{o}千米。", "全长{o}公里的{s}是该地区著名的河流。"),
                         ("{s}有多长？", "{s}的长度是多少公里？", "{s}全长多少公里？")),
        "river_country": (("{s}是{o}的一条河流。", "{s}流经{o}。", "{s}在{o}境内流淌。"),
                          ("{s}流经哪个国家？", "{s}是哪个国家的河流？", "{s}这条河位于哪个国家？")),
        "mountain_height": (("{s}海拔{o}米。", "{s}的高度为{o}米。", "海拔{o}米的{s}是一座著名的山。"),
                            ("{s}海拔多少米？", "{s}有多高？", "{s}的高度是多少米？")),
        "mountain_country": (("{s}是{o}的一座山。", "{s}位于{o}。", "{s}耸立在{o}境内。"),
                             ("{s}这座山位于哪个国家？", "{s}是哪个国家的山？", "{s}在哪个国家境内？")),
        "birth_year": (("{s}出生于{o}年。", "{s}生于{o}年。", "{s}的出生年份是{o}年。"),
                       ("{s}出生于哪一年？", "{s}是哪年出生的？", "{s}的出生年份是哪一年？")),
        "birthplace": (("{s}出生在{o}。", "{s}的出生地是{o}。", "{s}来自{o}。"),
                       ("{s}出生在哪里？", "{s}的出生地是哪座城市？", "{s}是在哪座城市出生的？")),
        "occupation": (("{s}的职业是{o}。", "{s}是一名{o}。", "{s}以{o}的身份为人所知。"),
                       ("{s}的职业是什么？", "{s}是做什么工作的？", "{s}从事什么职业？")),
        "employer": (("{s}在{o}工作。", "{s}的雇主是{o}。", "{s}多年来一直任职于{o}。"),
                     ("{s}在哪里工作？", "{s}在哪家公司工作？", "{s}的雇主是谁？")),
        "founded": (("{s}成立于{o}年。", "{s}创建于{o}年。", "{s}的历史可以追溯到{o}年。"),
                    ("{s}是哪一年成立的？", "{s}成立于何时？", "{s}创建于哪一年？")),
        "headquarters": (("{s}的总部位于{o}。", "{s}总部设在{o}。", "{s}是一家总部在{o}的企业。"),
                         ("{s}的总部在哪里？", "{s}的总部位于哪座城市？", "{s}总部设在哪里？")),
    },
    "ko": {
        "capital": (("{s}의 수도는 {o}이다.", "{o_tp} {s}의 수도이다.", "{s}의 정부 기관은 수도인 {o}에 있다."),
                    ("{s}의 수도는 어디인가요?", "{s}의 수도는 어느 도시인가요?", "어느 도시가 {s}의 수도인가요?")),
        "continent": (("{s_tp} {o}에 위치한 나라이다.", "{s_tp} {o}의 국가 중 하나이다.", "지리적으로 {s_tp} {o}에 속한다."),
                      ("{s_tp} 어느 대륙에 있나요?", "{s_tp} 어느 대륙에 속하나요?", "{s_sb} 위치한 대륙은 어디인가요?")),
        "country_population": (("{s}의 인구는 약 {o}명이다.", "{s}에는 약 {o}명이 살고 있다.", "{s}의 추정 인구는 {o}명이다."),
                               ("{s}의 인구는 얼마인가요?", "{s}에는 몇 명이 살고 있나요?", "{s}의 인구는 몇 명인가요?")),
        "city_country": (("{s_tp} {o}의 도시이다.", "{s_tp} {o}에 위치한 도시이다.", "{s_tp} {o}의 주요 도시 중 하나이다."),
                         ("{s_tp} 어느 나라에 있나요?", "{s_tp} 어느 나라의 도시인가요?", "{s_sb} 위치한 나라는 어디인가요?")),
        "city_population": (("{s}의 인구는 약 {o}명이다.", "{s}에는 약 {o}명의 주민이 살고 있다.", "약 {o}명이 {s}에 거주한다."),
                            ("{s} 시의 인구는 몇 명인가요?", "{s}에는 몇 명이 살고 있나요?", "{s}에 거주하는 사람은 몇 명인가요?")),
        "river_length": (("{s}의 길이는 {o}킬로미터이다.", "{s_tp} 길이 약 {o}km의 강이다.", "총길이 {o}km의 {s_tp} 이 지역의 대표적인 강이다."),
                         ("{s}의 길이는 얼마인가요?", "{s}의 길이는 몇 킬로미터인가요?", "{s}의 총길이는 몇 km인가요?")),
        "river_country": (("{s_tp} {o_ob} 흐르는 강이다.", "{s_tp} {o}의 영토를 가로질러 흐른다.", "{s_tp} {o}에 있는 강이다."),
                          ("{s_tp} 어느 나라를 흐르나요?", "{s_tp} 어느 나라의 강인가요?", "{s_sb} 흐르는 나라는 어디인가요?")),
        "mountain_height": (("{s}의 높이는 {o}미터이다.", "{s_tp} 해발 {o}m에 이른다.", "해발 {o}m의 {s_tp} 유명한 산이다."),
                            ("{s}의 높이는 몇 미터인가요?", "{s_tp} 얼마나 높나요?", "{s}의 해발 고도는 몇 m인가요?")),
        "mountain_country": (("{s_tp} {o}에 있는 산이다.", "{s_tp} {o}에 위치해 있다.", "{s_tp} {o}의 영토에 솟아 있다."),
                             ("{s_tp} 어느 나라에 있나요?", "{s_tp} 어느 나라의 산인가요?", "{s_sb} 솟아 있는 나라는 어디인가요?")),
        "birth_year": (("{s_tp} {o}년에 태어났다.", "{s}의 출생 연도는 {o}년이다.", "{o}년에 {s_sb} 태어났다."),
                       ("{s_tp} 몇 년에 태어났나요?", "{s_tp} 언제 태어났나요?", "{s}의 출생 연도는 언제인가요?")),
        "birthplace": (("{s_tp} {o}에서 태어났다.", "{s}의 출생지는 {o}이다.", "{s_tp} {o} 출신이다."),
                       ("{s_tp} 어디에서 태어났나요?", "{s}의 출생지는 어디인가요?", "{s_tp} 어느 도시에서 태어났나요?")),
        "occupation": (("{s}의 직업은 {o}이다.", "{s_tp} {o_ro} 알려져 있다.", "{s_tp} {o_ro} 활동하고 있다."),
                       ("{s}의 직업은 무엇인가요?", "{s_tp} 어떤 일을 하나요?", "{s_tp} 무슨 일을 하는 사람인가요?")),
        "employer": (("{s_tp} {o}에서 일한다.", "{s}의 직장은 {o}이다.", "{s_tp} 여러 해 동안 {o}에서 근무해 왔다."),
                     ("{s_tp} 어디에서 일하나요?", "{s}의 직장은 어디인가요?", "{s_tp} 어느 회사에서 근무하나요?")),
        "founded": (("{s_tp} {o}년에 설립되었다.", "{s}의 창립 연도는 {o}년이다.", "{s}의 역사는 {o}년에 시작되었다."),
                    ("{s_tp} 언제 설립되었나요?", "{s_tp} 몇 년에 설립되었나요?", "{s}의 창립 연도는 언제인가요?")),
        "headquarters": (("{s}의 본사는 {o}에 있다.", "{s_tp} {o}에 본사를 둔 기업이다.", "{s}의 본부는 {o}에 위치해 있다."),
                         ("{s}의 본사는 어디에 있나요?", "{s}의 본사는 어느 도시에 있나요?", "{s_tp} 어디에 본사를 두고 있나요?")),
    },
}

# Languages written without spaces between sentences.
NO_SPACE_LANGS = frozenset({"ja", "zh"})

_GENDER = re.compile(r"\[([^|\]]*)\|([^\]]*)\]")
# Final-consonant reading of characters that are not Hangul syllables (digits, Latin letters, punctuation).
_KO_DIGIT_BATCHIM = {"0": True, "1": True, "2": False, "3": True, "4": False, "5": False,
                     "6": True, "7": True, "8": True, "9": False}
_BN_VOWEL_END = set("ািীুূৃেৈোৌঅআইঈউঊএঐওঔ")


def _ko_final(word: str) -> int | None:
    """Final consonant (jongseong index, 0 = none) of the last Korean reading of ``word``."""
    for ch in reversed(word.strip()):
        if "가" <= ch <= "힣":
            return (ord(ch) - 0xAC00) % 28
        if ch in _KO_DIGIT_BATCHIM:
            return 1 if _KO_DIGIT_BATCHIM[ch] else 0
        if ch.isalpha():
            return 4 if ch.lower() in "lmn" else 0
    return 0


def ko_particle(word: str, with_final: str, without_final: str) -> str:
    """``word`` + the particle form its final sound calls for (은/는, 이/가, 을/를)."""
    return word + (with_final if _ko_final(word) else without_final)


def ko_ro(word: str) -> str:
    """``word`` + 으로/로 (로 after a vowel or ㄹ, index 8)."""
    final = _ko_final(word)
    return word + ("로" if final in (0, 8) else "으로")


def bn_genitive(word: str) -> str:
    """Bengali genitive: -র after a vowel, -এর after digits/Latin, -ের after a consonant."""
    last = word[-1]
    if last in _BN_VOWEL_END:
        return word + "র"
    if not ("\u0980" <= last <= "\u09ff"):
        return word + "-এর"
    return word + "ের"


def slot_forms(lang: str, s: str, o: str) -> dict[str, str]:
    """All slot values a template of ``lang`` may use, for subject ``s`` and object ``o``."""
    forms = {"s": s, "o": o}
    if lang == "ko":
        forms.update(s_tp=ko_particle(s, "은", "는"), s_sb=ko_particle(s, "이", "가"),
                     o_tp=ko_particle(o, "은", "는"), o_ob=ko_particle(o, "을", "를"), o_ro=ko_ro(o))
    elif lang == "bn":
        forms.update(s_gen=bn_genitive(s))
    elif lang == "en":
        forms.update(o_a=("an " if o[:1].lower() in "aeiou" else "a ") + o)
    return forms


def render(template: str, lang: str, s: str, o: str = "", gender: str = "m") -> str:
    """Fill ``template``: gender choices first, then the slots.

    In English a slot value may start with a lowercase "the " (``the Nile``);
    a sentence that then starts with it is capitalised.
    """
    text = _GENDER.sub(lambda m: m.group(2) if gender == "f" else m.group(1), template)
    text = text.format_map(slot_forms(lang, s, o))
    if lang == "en" and text[:1].islower():
        text = text[0].upper() + text[1:]
    return text


def passage_templates(lang: str, relation: str) -> tuple[str, ...]:
    return TEMPLATES[lang][relation][0]


def question_templates(lang: str, relation: str) -> tuple[str, ...]:
    return TEMPLATES[lang][relation][1]


def join_sentences(lang: str, sentences: list[str]) -> str:
    return ("" if lang in NO_SPACE_LANGS else " ").join(sentences)
