"""`campaign-planner sky` and `campaign-planner dstack`: the plan as a SkyPilot task or a
dstack run configuration, written beside plan.toml."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from planner.cli.args import Parser
from planner.errors import InputError

if TYPE_CHECKING:
    from planner.planfile.plan import Plan
    from planner.run.cloud import Launch

INSTALL_HELP = ("what pip installs to bring the planner onto the machine (default: "
                "campaign-planner); a wheel file or any requirement spec")


def _common(p: Parser) -> None:
    p.add_argument("plan", metavar="PLAN", help="plan.toml (or the folder holding it); "
                   "its order.toml beside it gives the environment")
    p.add_argument("--force", action="store_true", help="overwrite an existing file")
    p.add_argument("--catalog", metavar="FILE", help="your own card catalog (names, prices)")
    p.add_argument("--spot", action="store_true",
                   help="spot or preemptible machines (the run resumes on a new one)")
    p.add_argument("--disk-gb", type=int, metavar="GB",
                   help="disk of the machine (default: an upper bound from the plan's "
                        "checkpoints and exports)")
    p.add_argument("--install", default="campaign-planner", metavar="SPEC", help=INSTALL_HELP)


def _prepare(args: argparse.Namespace, tool: str) -> tuple[Plan, Path, str, Launch]:
    """The plan, its path, the card's name in `tool`, and the launch."""
    from planner.run import prepare
    from planner.run.cloud import launch, name_for
    from planner.spec.catalog import load_catalog

    if args.disk_gb is not None and not 10 <= args.disk_gb <= 1_000_000:
        raise InputError("must be between 10 and 1000000", field="--disk-gb")
    if not args.install.strip() or any(ord(ch) < 32 for ch in args.install):
        raise InputError("expected a pip requirement or a file", field="--install")
    plan, plan_path = prepare.load_plan(args.plan)
    shipped = load_catalog()
    catalog = load_catalog(args.catalog) if args.catalog else shipped
    card = catalog.get(plan.campaign.card, file=args.catalog or None, field="campaign.card")
    hint = "of your --catalog file" if args.catalog else "of a catalog passed with --catalog"
    name = name_for(card, plan.campaign.card, tool, hint)
    job = launch(plan, plan_path, card, install=args.install,
                 shipped_card=shipped.cards.get(plan.campaign.card) == card,
                 disk_gb=args.disk_gb)
    return plan, plan_path, name, job


def _shown(path: Path) -> str:
    """A path as the user gave it: relative to the current folder when it lies inside."""
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _bucket(text: str | None, campaign_id: str, field: str) -> str:
    from planner.run.cloud import BUCKET, DSTACK_NAME, resource_name

    dstack = field == "--volume"
    name = text if text is not None else resource_name(f"campaign-{campaign_id}",
                                                       41 if dstack else 63)
    if dstack and not DSTACK_NAME.fullmatch(name):
        raise InputError("expected 2 to 41 lower-case letters, digits and `-`, starting with "
                         "a letter (dstack's rule)", field=field)
    if not dstack and not BUCKET.fullmatch(name):
        raise InputError("expected 3 to 63 lower-case letters, digits and `-`", field=field)
    return name


def _write(files: list[tuple[Path, dict[str, Any]]], force: bool) -> None:
    from planner.run.cloud_yaml import dump
    from planner.tomlio import write_all

    for path, _ in files:
        if path.is_dir() and not path.is_symlink():  # --force replaces files, not folders
            raise InputError("is a folder; move it away", file=path)
    write_all([(p, dump(d)) for p, d in files], force=force, field="--force")


def sky_main(argv: Sequence[str]) -> int:
    """`campaign-planner sky PLAN`: a SkyPilot task YAML beside the plan."""
    p = Parser(prog="campaign-planner sky",
               description="Write sky.yaml beside the plan: a SkyPilot task that rents the "
                           "plan's cards for its window, installs the order's environment and "
                           "runs the plan, its journal and checkpoints on a storage bucket so "
                           "a recovered job resumes. Launch with `sky jobs launch sky.yaml` "
                           "(or `sky launch`).")
    _common(p)
    p.add_argument("--bucket", metavar="NAME",
                   help="the storage bucket for the journal, checkpoints and exports "
                        "(default: campaign-<plan id>)")
    p.add_argument("--store", choices=("s3", "gcs", "azure", "r2", "ibm", "oci"),
                   help="the bucket's store (default: SkyPilot's choice, the cloud's own)")
    p.add_argument("--per-run", action="store_true",
                   help="one managed job per run (each with its evaluations) under sky-jobs/, "
                        "for a campaign spread over many machines")
    args = p.parse_args(argv)
    from planner.run.cloud_yaml import PER_RUN_NOTE, groups, sky_run_task, sky_task

    plan, plan_path, name, job = _prepare(args, "sky")
    bucket = _bucket(args.bucket, plan.campaign.id, "--bucket")
    folder = plan_path.parent
    common = {"workdir": str(folder), "bucket": bucket, "spot": args.spot,
              "store": args.store}
    if args.per_run:
        from planner.nofollow import refusal
        from planner.run.cloud import disk

        if (folder / "sky-jobs").is_symlink():  # its files would land where it points
            raise refusal(folder / "sky-jobs")

        jobs = [(folder / "sky-jobs" / f"{g[0].id}.yaml",
                 sky_run_task(job, name, g, disk_gb=disk(plan, args.disk_gb, g)[0], **common))
                for g in groups(plan)]
        _write(jobs, args.force)
        widest = max(len(r.card) for r in plan.runs)
        print(f"Wrote {len(jobs)} SkyPilot managed jobs to {_shown(folder / 'sky-jobs')}: "
              f"a run and its evaluations each, on {name}:{widest} at most, bucket {bucket}")
        print(f"Note: {PER_RUN_NOTE}")
        print(f"Launch each with: sky jobs launch {_shown(folder / 'sky-jobs')}/RUN.yaml")
        return 0
    out = folder / "sky.yaml"
    _write([(out, sky_task(job, name, **common))], args.force)
    print(f"Wrote {_shown(out)}: {name}:{job.cards} for the {job.window_hours:g} h window, "
          f"disk {job.disk_gb} GB, bucket {bucket}")
    print(f"  disk: {job.disk_note}")
    print(f"Launch with: sky jobs launch {_shown(out)}")
    return 0


def dstack_main(argv: Sequence[str]) -> int:
    """`campaign-planner dstack PLAN`: a dstack run configuration beside the plan."""
    p = Parser(prog="campaign-planner dstack",
               description="Write .dstack.yml beside the plan: a dstack task that rents the "
                           "plan's cards for its window (max_duration), at most its price "
                           "(max_price), installs the order's environment and runs the plan "
                           "on a network volume. Apply with `dstack apply -f .dstack.yml`.")
    _common(p)
    p.add_argument("--volume", metavar="NAME",
                   help="the dstack network volume for the journal, checkpoints and exports "
                        "(default: campaign-<plan id>); create it first")
    p.add_argument("--max-price", type=float, metavar="PRICE",
                   help="the most to pay per hour for the machine (default: the plan's "
                        "price per card-hour × cards, when known)")
    args = p.parse_args(argv)
    from planner.run.cloud_yaml import dstack_run

    if args.max_price is not None and not 0 < args.max_price <= 1e6:  # nan fails too
        raise InputError("must be above 0 and at most 1000000", field="--max-price")
    plan, plan_path, name, job = _prepare(args, "dstack")
    volume = _bucket(args.volume, plan.campaign.id, "--volume")
    out = plan_path.parent / ".dstack.yml"
    config = dstack_run(job, name, folder=str(plan_path.parent), volume=volume, spot=args.spot,
                        max_price=args.max_price)
    _write([(out, config)], args.force)
    price = config.get("max_price")
    print(f"Wrote {_shown(out)}: {config['resources']['gpu']}, max_duration "
          f"{config['max_duration']}, max_price "
          f"{'none' if price is None else f'{price:g} {job.currency}/h'}, volume {volume}")
    print(f"Apply with: dstack apply -f {_shown(out)}")
    return 0
