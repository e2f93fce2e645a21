"""Packing a campaign into the window and the files that come out of it: discipline
checks, the schedule and its packers, the plan and order models, export and the text for
people. `planner.campaign.plan_campaign` puts these together."""
