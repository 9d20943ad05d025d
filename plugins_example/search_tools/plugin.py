"""Search and weather tools over built-in data, so the example works offline.

The declarations are the ones from the SDK's tool guide; only the data source is
local: a small corpus searched by keyword overlap and a fixed weather table.
"""

from __future__ import annotations

import re
from typing import Any

from plughost_sdk import Plugin, Tool, ToolError
from plughost_sdk.types import ToolParameterInfo, ToolParamType

MAX_RESULTS = 20

# (title, url, text): the "internet" this plugin searches.
CORPUS: tuple[tuple[str, str, str], ...] = (
    (
        "Python asyncio basics",
        "https://docs.example.org/python/asyncio",
        "An event loop runs coroutines; await suspends a task until a future is done.",
    ),
    (
        "Writing a JSON Schema",
        "https://docs.example.org/json-schema/intro",
        "A JSON Schema describes the type, properties and required fields of a document.",
    ),
    (
        "ZeroMQ socket patterns",
        "https://docs.example.org/zeromq/patterns",
        "ROUTER and DEALER sockets route messages between many peers without a broker.",
    ),
    (
        "msgpack in five minutes",
        "https://docs.example.org/msgpack/quickstart",
        "msgpack is a binary serialization format like JSON but smaller and faster.",
    ),
    (
        "The PNG file format",
        "https://docs.example.org/formats/png",
        "A PNG file is a signature followed by chunks: IHDR, IDAT with zlib data, and IEND.",
    ),
    (
        "Brewing pour-over coffee",
        "https://food.example.org/coffee/pour-over",
        "Use a medium grind, water just off the boil, and pour slowly in circles.",
    ),
    (
        "Sourdough starter care",
        "https://food.example.org/bread/sourdough-starter",
        "Feed the starter flour and water daily; it is ready when it doubles in size.",
    ),
    (
        "Oslo travel guide",
        "https://travel.example.org/oslo",
        "Oslo is the capital of Norway, known for its fjord, museums and winter weather.",
    ),
    (
        "Tokyo travel guide",
        "https://travel.example.org/tokyo",
        "Tokyo mixes neon districts, quiet temples and the best train network in the world.",
    ),
    (
        "How weather forecasts work",
        "https://science.example.org/weather/forecasts",
        "Forecasts run numerical weather models on observations of pressure and temperature.",
    ),
    (
        "Why the sky is blue",
        "https://science.example.org/light/blue-sky",
        "Air scatters short blue wavelengths of sunlight more than long red ones.",
    ),
    (
        "Getting started with Git",
        "https://docs.example.org/git/start",
        "Git records snapshots of a project; commit often and write clear commit messages.",
    ),
    (
        "Unit testing with pytest",
        "https://docs.example.org/python/pytest",
        "pytest finds test functions by name and reports assertion failures with context.",
    ),
    (
        "Houseplants for low light",
        "https://home.example.org/plants/low-light",
        "Snake plants, pothos and ZZ plants tolerate shade and occasional missed watering.",
    ),
    (
        "Beginner running plan",
        "https://health.example.org/running/beginner",
        "Alternate running and walking three times a week, adding a minute each week.",
    ),
)

WEATHER: dict[str, dict[str, Any]] = {
    "oslo": {"condition": "Light snow", "temperature_c": -3, "humidity_pct": 86, "wind_kph": 14},
    "tokyo": {"condition": "Clear", "temperature_c": 12, "humidity_pct": 48, "wind_kph": 9},
    "london": {"condition": "Drizzle", "temperature_c": 8, "humidity_pct": 91, "wind_kph": 20},
    "new york": {"condition": "Cloudy", "temperature_c": 5, "humidity_pct": 62, "wind_kph": 17},
    "sydney": {"condition": "Sunny", "temperature_c": 26, "humidity_pct": 55, "wind_kph": 11},
    "cairo": {"condition": "Sunny", "temperature_c": 22, "humidity_pct": 30, "wind_kph": 8},
    "beijing": {"condition": "Haze", "temperature_c": 2, "humidity_pct": 35, "wind_kph": 6},
    "são paulo": {
        "condition": "Thunderstorms",
        "temperature_c": 24,
        "humidity_pct": 80,
        "wind_kph": 12,
    },
}

_WORD = re.compile(r"\w+")


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower()))


class SearchPlugin(Plugin):
    """Offline stand-ins for web search and a weather service."""

    async def on_load(self) -> None:
        self.ctx.logger.info("Search plugin loaded documents=%d", len(CORPUS))

    @Tool(
        "search_web",
        brief_description="Search the internet for information",
        detailed_description=(
            "Use a search engine to find related information. Returns a list of results "
            "that best match the keywords."
        ),
        parameters=[
            ToolParameterInfo(
                name="query",
                param_type=ToolParamType.STRING,
                description="Search keywords",
                required=True,
            ),
            ToolParameterInfo(
                name="limit",
                param_type=ToolParamType.INTEGER,
                description="Maximum number of results to return",
                required=False,
                default=5,
            ),
        ],
        read_only=True,
    )
    async def search(self, query: str, limit: int = 5, **kwargs: Any) -> dict[str, Any]:
        """Search the built-in corpus."""
        if not 1 <= limit <= MAX_RESULTS:
            raise ToolError(f"limit must be between 1 and {MAX_RESULTS}, got {limit}")
        results = self._do_search(query, limit)
        return {"results": results, "count": len(results)}

    @Tool(
        "get_weather",
        brief_description="Get weather information for a specified city",
        parameters=[
            ToolParameterInfo(
                name="city",
                param_type=ToolParamType.STRING,
                description="City name",
                required=True,
            ),
        ],
        read_only=True,
    )
    async def get_weather(self, city: str, **kwargs: Any) -> dict[str, Any]:
        """Look the city up in the weather table."""
        weather = WEATHER.get(city.strip().lower())
        if weather is None:
            # A ToolError's message goes to the model: tell it what would work.
            known = ", ".join(name.title() for name in sorted(WEATHER))
            raise ToolError(f"No weather data for {city!r}. Known cities: {known}.")
        return {"city": city, "weather": dict(weather)}

    def _do_search(self, query: str, limit: int) -> list[dict[str, Any]]:
        terms = _words(query)
        scored = []
        for title, url, text in CORPUS:
            score = len(terms & _words(f"{title} {text}"))
            if score:
                scored.append((score, title, url, text))
        # Most overlapping words first; ties in title order so results are stable.
        scored.sort(key=lambda row: (-row[0], row[1]))
        return [
            {"title": title, "url": url, "snippet": text, "score": score}
            for score, title, url, text in scored[:limit]
        ]


def create_plugin() -> SearchPlugin:
    return SearchPlugin()
