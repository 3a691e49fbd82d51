"""Khmer dates, times and numbers as Phnom Penh reads them on a phone: Khmer month and day
names (Django's km catalogue), Western digits, 24-hour times, and money with a point and
thousands by comma, as prices in US dollars are written in Cambodia (Django's own km formats
swap them, which would turn $12.50 into 12,50)."""

DATE_FORMAT = "j F Y"
TIME_FORMAT = "H:i"
DATETIME_FORMAT = "j F Y, H:i"
YEAR_MONTH_FORMAT = "F Y"
MONTH_DAY_FORMAT = "j F"
SHORT_DATE_FORMAT = "d/m/Y"
SHORT_DATETIME_FORMAT = "d/m/Y H:i"
FIRST_DAY_OF_WEEK = 1  # Monday
DECIMAL_SEPARATOR = "."
THOUSAND_SEPARATOR = ","
NUMBER_GROUPING = 3
