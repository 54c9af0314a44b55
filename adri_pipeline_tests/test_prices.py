"""The price table (prices.py): every price a finite number written as one."""

import pytest

from adri_pipeline.cli import main
from adri_pipeline.jev.contract import RoutingConfigError
from adri_pipeline.prices import PriceTable


def _table(tmp_path, price: str):
    path = tmp_path / "prices.toml"
    path.write_text(f'[shapes.a]\nhourly_usd = {price}\n[ran_on]\ndefault = "a"\n', encoding="utf-8")
    return path


@pytest.mark.parametrize(
    "price, why",
    [
        ("inf", "finite number"),
        ("nan", "finite number"),
        ('"0.5"', "valid number"),
        ("true", "valid number"),
        ("0", "greater than 0"),
        ("-1.5", "greater than 0"),
    ],
)
def test_a_price_that_is_not_a_finite_positive_number_is_refused_naming_the_field(tmp_path, price, why):
    """Failed before: `inf`, "0.5" and `true` were read as prices (true as US$ 1 an hour)."""
    path = _table(tmp_path, price)
    with pytest.raises(RoutingConfigError, match=f"{path}: field shapes.a.hourly_usd: .*{why}"):
        PriceTable.read(path)


@pytest.mark.parametrize("price, hourly", [("0.061", 0.061), ("2", 2.0)])
def test_a_price_written_as_a_number_is_read(tmp_path, price, hourly):
    assert PriceTable.read(_table(tmp_path, price)).hourly("any") == hourly


def test_the_cli_refuses_an_infinite_price_in_one_line(tmp_path, capsys):
    path = _table(tmp_path, "inf")
    argv = ["routing", "run", "--dataset", "sample", "--prices", str(path), "--warehouse", str(tmp_path / "w.duckdb")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"{path}: field shapes.a.hourly_usd: Input should be a finite number" in err
    assert len(err.strip().splitlines()) == 1 and not (tmp_path / "routing").exists()
