use super::*;

#[test]
fn banded_windows_count_and_check() {
    let ext = Window::Banded {
        stride: 2,
        width: 2,
    };
    assert_eq!(ext.default_terms(10, Data::EMPTY), 5);
    assert!(ext.check(10).is_ok());
    assert!(ext.check(9).is_err());
    let chained = Window::Banded {
        stride: 1,
        width: 2,
    };
    assert_eq!(chained.default_terms(10, Data::EMPTY), 9);
    assert!(chained.check(1).is_err());
    assert!(Window::Separable.check(0).is_err());
}

#[test]
fn vars_replace_one_variable() {
    let x = [1.0, 2.0, 3.0];
    let v = Vars::with(&x, 1, 5.0);
    assert_eq!((v[0].0, v[1].0, v[2].0), (1.0, 5.0, 3.0));
    let plain = Vars::new(&x);
    assert_eq!((plain[0].0, plain[1].0, plain[2].0), (1.0, 2.0, 3.0));
}

#[test]
fn dot_sums_every_weighted_variable() {
    let x = [9.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
    let v = Vars::with(&x, 3, 30.0);
    // 1 + 4 + 90 + 16 + 25 + 36, the fifth product (in the remainder) included.
    assert_eq!(
        v.dot(1, &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]).0,
        1.0 + 4.0 + 90.0 + 16.0 + 25.0 + 36.0
    );
    assert_eq!(v.dot(0, &[]).0, 0.0);
}

#[test]
fn dot_row_weights_by_the_rows_columns() {
    // Two rows, three columns: row 1 is (20, 2, 0.5).
    let values = [10.0, 20.0, 1.0, 2.0, 0.25, 0.5];
    let row = Data::new(&values, 2).row(1);
    assert_eq!((row.get(0), row.get(1), row.get(2)), (20.0, 2.0, 0.5));
    let x = [7.0, 3.0, 4.0];
    let v = Vars::with(&x, 2, 8.0);
    assert_eq!(v.dot_row(1, row).0, 3.0 * 2.0 + 8.0 * 0.5);
    assert_eq!(Vars::new(&x).dot_row(0, row).0, 140.0 + 6.0 + 2.0);
    // With an intercept, on plain and perturbed windows: `plus + dot_row`, to the bit.
    for v in [Vars::new(&x), v] {
        let plus = v[0] * 0.1;
        assert_eq!(
            v.dot_row_plus(1, row, plus).0.to_bits(),
            (plus + v.dot_row(1, row)).0.to_bits()
        );
    }
}

#[test]
fn reads_outside_the_data_are_nan() {
    // Two rows, two columns.
    let values = [1.0, 2.0, 10.0, 20.0];
    let data = Data::new(&values, 2);
    assert_eq!(data.row(1).get(1), 20.0);
    assert!(data.row(1).get(2).is_nan());
    // Row 2 does not exist: its column 0 would otherwise alias row 0 of column 1.
    assert!(data.row(2).get(0).is_nan());
    assert!(Data::EMPTY.row(0).get(0).is_nan());
    // A dot product over columns of which one is missing, or over a missing row.
    let x = [1.0, 1.0, 1.0];
    assert_eq!(Vars::new(&x[..2]).dot_row(0, data.row(1)).0, 22.0);
    assert!(Vars::new(&x).dot_row(0, data.row(1)).0.is_nan());
    assert!(Vars::new(&x[..2]).dot_row(1, data.row(2)).0.is_nan());
    assert!(Vars::new(&x[..2]).dot_row(0, Data::EMPTY.row(0)).0.is_nan());
}

/// A table handed row after row too reads the same values, row past the data and column
/// past the row NaN as before; a row-after-row copy of the wrong length is ignored.
#[test]
fn rows_side_by_side_read_as_the_columns() {
    // Two rows, three columns: rows (1, 10, 100) and (2, 20, 200).
    let columns = [1.0, 2.0, 10.0, 20.0, 100.0, 200.0];
    let by_row = [1.0, 10.0, 100.0, 2.0, 20.0, 200.0];
    let plain = Data::new(&columns, 2);
    let data = plain.with_rows(&by_row);
    let x = [0.5, 0.25, 0.125];
    for k in 0..3 {
        for c in 0..4 {
            let (a, b) = (plain.row(k).get(c), data.row(k).get(c));
            assert!(
                a.to_bits() == b.to_bits(),
                "row {k}, column {c}: {a} vs {b}"
            );
        }
        for start in 0..3 {
            let dot = |d: Data<'_>| Vars::new(&x).dot_row(start, d.row(k)).0;
            assert_eq!(
                dot(plain).to_bits(),
                dot(data).to_bits(),
                "row {k} from {start}"
            );
        }
    }
    // Column 3 of row 0 would be row 1's first value in the row-after-row table.
    assert!(data.row(0).get(3).is_nan());
    assert!(Vars::new(&[1.0; 4]).dot_row(0, data.row(0)).0.is_nan());
    let short = plain.with_rows(&by_row[..5]);
    assert_eq!(short.row(1).get(2), 200.0);
    assert!(data.col(1).iter().eq([10.0, 20.0]));
}

#[test]
fn data_columns() {
    let values = [1.0, 2.0, 3.0, 10.0, 20.0, 30.0];
    let data = Data::new(&values, 3);
    assert_eq!(data.cols(), 2);
    assert!(data.col(1).iter().eq([10.0, 20.0, 30.0]));
}

/// A table stored as f32 reads, everywhere a term reads it, the f64 each value widens to: the
/// same bits as the rounded values stored as f64.
#[test]
fn f32_data_reads_as_the_same_values_stored_as_f64() {
    let narrow: [f32; 12] = core::array::from_fn(|i| 0.1 * i as f32 + 1.0 / 3.0);
    let wide = narrow.map(f64::from);
    let (f32s, f64s) = (
        Data::of(crate::Values::F32(&narrow), 4),
        Data::new(&wide, 4),
    );
    assert_eq!(f32s.values().data_type(), crate::DataType::F32);
    assert_eq!((f32s.rows(), f32s.cols()), (4, 3));
    let x = [0.5, -1.25, 2.0];
    for k in 0..4 {
        for c in 0..4 {
            let (a, b) = (f32s.row(k).get(c), f64s.row(k).get(c));
            assert!(a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan()));
        }
        let dot = |d: Data<'_>| Vars::new(&x).dot_row(0, d.row(k)).0.to_bits();
        assert_eq!(dot(f32s), dot(f64s), "row {k}");
    }
    for c in 0..3 {
        assert!(f32s.col(c).iter().eq(f64s.col(c).iter()), "column {c}");
        let dot = |d: Data<'_>| Vars::new(&[1.5; 4]).dot_col(0, d.col(c)).0.to_bits();
        assert_eq!(dot(f32s), dot(f64s), "column {c}");
    }
    assert!(
        f32s.col(3).iter().all(f64::is_nan),
        "a column past the data"
    );
    assert!(f32s.col(usize::MAX).get(0).is_nan());
}

#[test]
fn data_types_by_name_and_index() {
    use crate::DataType;
    for t in DataType::ALL {
        assert_eq!(DataType::from_name(t.name()), Some(t));
        assert_eq!(DataType::from_index(t.index()), Some(t));
    }
    assert_eq!((DataType::F64.bytes(), DataType::F32.bytes()), (8, 4));
    assert_eq!(DataType::from_name("f16"), None);
    assert_eq!(DataType::default(), DataType::F64);
}
