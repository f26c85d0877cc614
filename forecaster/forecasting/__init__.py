"""Forecasting: numpy in, ``core.series.Forecast`` out.

Models, calibration, backtests, selection and artifacts.
"""
