"""Accounts: admins, raters and researchers, and raters' access to pools."""
