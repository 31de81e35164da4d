"""The shared vocabulary, lowest floor: what every other part of Sealcheck names."""
