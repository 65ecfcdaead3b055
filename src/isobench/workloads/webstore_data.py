"""The webstore's data set, generated deterministically from a seed (DVD
Store 2's ds2_create_cust / ds2_create_prod in spirit): tab-separated text
for PostgreSQL's COPY. Pure: the same (seed, size) gives the same bytes.
"""

from __future__ import annotations

import random

CATEGORIES = (
    "Action",
    "Animation",
    "Children",
    "Classics",
    "Comedy",
    "Documentary",
    "Drama",
    "Family",
    "Foreign",
    "Games",
    "Horror",
    "Music",
    "New",
    "Sci-Fi",
    "Sports",
    "Travel",
)
_WORDS = (
    "ACADEMY",
    "AFRICAN",
    "AGENT",
    "AIRPLANE",
    "ALADDIN",
    "ALAMO",
    "ALIEN",
    "ALONE",
    "AMADEUS",
    "AMERICAN",
    "ANGELS",
    "ANNIE",
    "APOLLO",
    "ARABIA",
    "ARMY",
    "ATLANTIS",
    "BABY",
    "BACKLASH",
    "BANG",
    "BEAST",
    "BEHAVIOR",
    "BIRDS",
    "BLADE",
    "BLOOD",
    "BOUND",
    "BRAVE",
    "BRIDE",
    "BULL",
    "CANDLES",
    "CAPER",
    "CASTLE",
    "CHAMBER",
    "CHICAGO",
    "CIRCUS",
    "CLOCKWORK",
    "COAST",
    "CROW",
)
_NAMES = (
    "ADAM",
    "ALAN",
    "ANNA",
    "BELA",
    "BOB",
    "CARY",
    "DAN",
    "EMMA",
    "FRED",
    "GINA",
    "HELEN",
    "IAN",
    "JOE",
    "KIM",
    "LIZA",
    "MAE",
    "NICK",
    "OLGA",
    "PENN",
    "RIP",
    "SEAN",
    "TOM",
    "UMA",
    "VAL",
)
_COUNTRIES = (
    "US",
    "Australia",
    "Canada",
    "Chile",
    "China",
    "France",
    "Germany",
    "Japan",
    "Russia",
    "South Africa",
    "UK",
)
INITIAL_STOCK = 10_000  # per product; purchases that would take it below 0 roll back


def title_of(rng: random.Random) -> str:
    return f"{rng.choice(_WORDS)} {rng.choice(_WORDS)}"


def actor_of(rng: random.Random) -> str:
    return f"{rng.choice(_NAMES)} {rng.choice(_WORDS)}"


def categories_tsv() -> str:
    return "".join(f"{i}\t{name}\n" for i, name in enumerate(CATEGORIES, start=1))


def customers_tsv(n: int, seed: int) -> str:
    """Customer i's username is user<i> and its password 'password' (as DS2)."""
    rng = random.Random(f"customers-{seed}")
    out = []
    for i in range(1, n + 1):
        first, last = rng.choice(_NAMES), rng.choice(_WORDS)
        out.append(
            f"{i}\t{first}\t{last}\tuser{i}\tpassword\t{first.lower()}{i}@example.com\t"
            f"{rng.choice(_COUNTRIES)}\t{rng.randint(18, 90)}\t{rng.randrange(20_000, 100_001, 20_000)}\t"
            f"{rng.choice('MF')}\n"
        )
    return "".join(out)


def products_tsv(n: int, seed: int) -> str:
    rng = random.Random(f"products-{seed}")
    return "".join(
        f"{i}\t{rng.randint(1, len(CATEGORIES))}\t{title_of(rng)}\t{actor_of(rng)}\t"
        f"{rng.randint(999, 2999) / 100:.2f}\t{1 if rng.random() < 0.1 else 0}\n"
        for i in range(1, n + 1)
    )


def inventory_tsv(n: int, stock: int = INITIAL_STOCK) -> str:
    return "".join(f"{i}\t{stock}\t0\n" for i in range(1, n + 1))


def tables(customers: int, products: int, seed: int, stock: int = INITIAL_STOCK) -> dict[str, str]:
    """File name -> contents, as schema.sql's COPY statements read them."""
    return {
        "categories.tsv": categories_tsv(),
        "customers.tsv": customers_tsv(customers, seed),
        "products.tsv": products_tsv(products, seed),
        "inventory.tsv": inventory_tsv(products, stock),
    }
