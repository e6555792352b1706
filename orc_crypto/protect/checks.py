"""The checks a protection policy passes before anything is planned: each rule's mask is one ORC
reads, each key name one the key providers accept, and (when a key provider is at hand) every key
a rule names exists — so a missing key stops the plan, never an apply half-way through."""

from __future__ import annotations

from watershed.graph.errors import WatershedError
from watershed.graph.protection import ProtectionPolicy
from watershed.orc_crypto.keys.base import KeyProvider, KeyProviderError, UnknownKeyError
from watershed.orc_crypto.keys.material import check_key_name
from watershed.orc_crypto.masking.values import MaskError, check_mask
from watershed.orc_crypto.options import OptionError, format_mask, parse_mask


class ProtectionError(WatershedError, ValueError):
    """A protection policy, plan or table the planner cannot work with; the message names it."""


def normal_mask(text: str) -> str:
    """A mask as ORC writes it in a file's tail (quoted where needed): masks compare by this text."""
    spec = parse_mask(text)
    return format_mask(spec.name, spec.parameters)


def check_protection(policy: ProtectionPolicy, section: str = "protection.rules") -> None:
    """Raise ProtectionError naming the first rule whose mask or key name ORC would reject;
    `section` is where the rules were written (a `watershed ddl` policy file calls them levels)."""
    for i, rule in enumerate(policy.rules):
        where = f"{section}[{i}]"
        try:
            check_mask(parse_mask(rule.mask))
        except (OptionError, MaskError) as exc:
            raise ProtectionError(f"{where}.mask: {exc}") from None
        try:
            check_key_name(rule.key)
        except KeyProviderError as exc:
            raise ProtectionError(f"{where}.key: {exc}") from None


def check_keys(policy: ProtectionPolicy, provider: KeyProvider) -> None:
    """Every key a rule names exists in the key provider; ProtectionError lists the missing ones
    (and any the provider would not describe, with its reason)."""
    missing: list[str] = []
    failed: list[str] = []
    for key in dict.fromkeys(rule.key for rule in policy.rules):
        try:
            provider.key_info(key)
        except UnknownKeyError:
            missing.append(key)
        except KeyProviderError as exc:
            failed.append(f"{key} ({exc})")
    problems = []
    if missing:
        problems.append(
            f"the KMS has no key named {', '.join(missing)} (create it: `watershed kms create-key`)"
        )
    if failed:
        problems.append(
            f"cannot read the KMS metadata of {', '.join(failed)} (a missing key or no ACL for it)"
        )
    if problems:
        raise ProtectionError(
            f"protection.rules: {'; '.join(problems)} (create it with `watershed kms create-key`)"
        )
