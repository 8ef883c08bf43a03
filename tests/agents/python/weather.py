"""A weather assistant on the official `openai` package: the Responses API
and a tool loop, as a team would write it.

Nothing in it knows scaffold: `OpenAI()` reads `OPENAI_BASE_URL` and
`OPENAI_API_KEY`, which scaffold sets to the cell's bridge and a key
(a placeholder in playback). The question comes as JSON on stdin; the
model and instructions of the variant in `SCAFFOLD_MODEL` and
`SCAFFOLD_PROMPT`; the answer goes to stdout.
"""

import json
import os
import sys

from openai import OpenAI

WEATHER = {
    "paris": {"city": "Paris", "sky": "light rain", "celsius": 14},
    "tokyo": {"city": "Tokyo", "sky": "sunny", "celsius": 22},
    "oslo": {"city": "Oslo", "sky": "snow", "celsius": -3},
}

TOOLS = [
    {
        "type": "function",
        "name": "get_weather",
        "description": "Today's weather in a city: conditions and temperature in degrees Celsius",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    }
]


def get_weather(city):
    return WEATHER.get(city.lower(), {"error": f"no weather data for {city}"})


def main():
    question = json.load(sys.stdin)
    client = OpenAI()
    model = os.environ.get("SCAFFOLD_MODEL", "gpt-4o-mini")
    instructions = os.environ.get("SCAFFOLD_PROMPT")
    items = [{"role": "user", "content": question}]
    for _ in range(5):
        response = client.responses.create(
            model=model, instructions=instructions, input=items, tools=TOOLS
        )
        calls = [item for item in response.output if item.type == "function_call"]
        if not calls:
            print(response.output_text)
            return
        items += [item.model_dump(exclude_none=True) for item in response.output]
        for call in calls:
            result = get_weather(**json.loads(call.arguments))
            items.append(
                {
                    "type": "function_call_output",
                    "call_id": call.call_id,
                    "output": json.dumps(result),
                }
            )
    sys.exit("still calling tools after 5 rounds")


if __name__ == "__main__":
    main()
