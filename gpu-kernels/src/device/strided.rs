//! [`Strided`]: every `stride`-th element of a slice, as a term reads one row of its data.

/// Every `stride`-th element of a slice, `len` of them: the columns of one row of a
/// column-major matrix. The bounds are checked once, when the view is made; [`get`](Self::get)
/// then compares only `i` with `len`, which the compiler drops in a loop over `0..len`. A
/// checked read per column would cost a dense term's value pass a large share of its time.
#[derive(Clone, Copy, Debug)]
pub struct Strided<'a> {
    first: *const f64,
    stride: usize,
    len: usize,
    values: core::marker::PhantomData<&'a [f64]>,
}

/// What a [`Strided`] view of elements that are not all in its slice reads, at stride 0.
static NAN: f64 = f64::NAN;

impl<'a> Strided<'a> {
    /// Elements `start`, `start + stride`, … of `values`, `len` of them; `len` NaNs instead
    /// unless all of them lie in `values`. Either way the view has `len` elements, so that one
    /// loop over them serves both cases.
    #[inline(always)]
    pub fn new(values: &'a [f64], start: usize, stride: usize, len: usize) -> Self {
        let in_bounds = match len.checked_sub(1) {
            None => true,
            Some(last_step) => last_step
                .checked_mul(stride)
                .and_then(|step| step.checked_add(start))
                .is_some_and(|last| last < values.len()),
        };
        if in_bounds {
            Strided {
                // Not `add`: with `len` = 0, `start` may lie past the slice.
                first: values.as_ptr().wrapping_add(start),
                stride,
                len,
                values: core::marker::PhantomData,
            }
        } else {
            Strided {
                first: &NAN,
                stride: 0,
                len,
                values: core::marker::PhantomData,
            }
        }
    }

    /// The number of elements.
    #[inline(always)]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the view has no elements.
    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The elements as a slice where they lie side by side (stride 1), which a loop can then
    /// read several at a time.
    #[inline(always)]
    pub fn contiguous(&self) -> Option<&'a [f64]> {
        if self.stride == 1 {
            // SAFETY: with stride 1, `new` checked that `start .. start + len` lies in the
            // borrowed slice (or `len` is 0 and the pointer is not read), borrowed for `'a`.
            Some(unsafe { core::slice::from_raw_parts(self.first, self.len) })
        } else {
            None
        }
    }

    /// Element `i` of the view; NaN for `i ≥ len`.
    #[inline(always)]
    pub fn get(&self, i: usize) -> f64 {
        if i < self.len {
            // SAFETY: either `new` checked that `start + (len − 1)·stride` is an index of the
            // borrowed slice, without overflow, and `i < len` keeps `i·stride` within that; or
            // the stride is 0 and `first` points to the static NaN.
            unsafe { *self.first.add(i * self.stride) }
        } else {
            f64::NAN
        }
    }
}
