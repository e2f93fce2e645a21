"""Presets and the card catalog shipped with campaign-planner, as TOML package data."""
