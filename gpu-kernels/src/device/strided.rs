//! [`Strided`]: every `stride`-th element of a slice, as a term reads one row or one column of
//! its data.

/// A type data may be stored as, read as f64.
pub trait Element: Copy {
    /// The value as f64: exact for both.
    fn widen(self) -> f64;
}

impl Element for f64 {
    #[inline(always)]
    fn widen(self) -> f64 {
        self
    }
}

impl Element for f32 {
    #[inline(always)]
    fn widen(self) -> f64 {
        f64::from(self)
    }
}

/// A [`Strided`] view of elements stored as `E`: what a loop reads once it has matched the
/// view's type, so that no read in the loop branches on it.
#[derive(Clone, Copy, Debug)]
pub struct StridedOf<'a, E> {
    first: *const E,
    stride: usize,
    len: usize,
    values: core::marker::PhantomData<&'a [E]>,
}

/// What a [`Strided`] view of elements that are not all in its slice reads, at stride 0.
static NAN: f64 = f64::NAN;

impl<'a, E: Element> StridedOf<'a, E> {
    /// Elements `start`, `start + stride`, … of `values`, `len` of them, if all lie there.
    #[inline(always)]
    fn new(values: &'a [E], start: usize, stride: usize, len: usize) -> Option<Self> {
        let in_bounds = match len.checked_sub(1) {
            None => true,
            Some(last_step) => last_step
                .checked_mul(stride)
                .and_then(|step| step.checked_add(start))
                .is_some_and(|last| last < values.len()),
        };
        in_bounds.then(|| StridedOf {
            // Not `add`: with `len` = 0, `start` may lie past the slice.
            first: values.as_ptr().wrapping_add(start),
            stride,
            len,
            values: core::marker::PhantomData,
        })
    }

    /// Element `i` of the view, as f64; NaN for `i ≥ len`.
    #[inline(always)]
    pub fn get(&self, i: usize) -> f64 {
        if i < self.len {
            // SAFETY: either `new` checked that `start + (len − 1)·stride` is an index of the
            // borrowed slice, without overflow, and `i < len` keeps `i·stride` within that; or
            // the stride is 0 and `first` points to the static NaN.
            unsafe { *self.first.add(i * self.stride) }.widen()
        } else {
            f64::NAN
        }
    }
}

/// A [`Strided`] view by the type its elements are stored as.
#[derive(Clone, Copy, Debug)]
pub enum Elements<'a> {
    /// Stored as f64.
    F64(StridedOf<'a, f64>),
    /// Stored as f32.
    F32(StridedOf<'a, f32>),
}

/// Every `stride`-th element of a slice of f64 or f32, `len` of them, read as f64: the columns
/// of one row of a column-major matrix, or one of its columns. The bounds are checked once,
/// when the view is made; [`get`](Self::get) then compares only `i` with `len`, which the
/// compiler drops in a loop over `0..len`. A checked read per column would cost a dense term's
/// value pass a large share of its time.
#[derive(Clone, Copy, Debug)]
pub struct Strided<'a> {
    elements: Elements<'a>,
}

impl<'a> Strided<'a> {
    /// Elements `start`, `start + stride`, … of `values`, `len` of them; `len` NaNs instead
    /// unless all of them lie in `values`. Either way the view has `len` elements, so that one
    /// loop over them serves both cases.
    #[inline(always)]
    pub fn new(values: &'a [f64], start: usize, stride: usize, len: usize) -> Self {
        Self::or_nan(
            StridedOf::new(values, start, stride, len).map(Elements::F64),
            len,
        )
    }

    /// As [`new`](Self::new), over f32 values, each read as the f64 it widens to.
    #[inline(always)]
    pub fn new_f32(values: &'a [f32], start: usize, stride: usize, len: usize) -> Self {
        Self::or_nan(
            StridedOf::new(values, start, stride, len).map(Elements::F32),
            len,
        )
    }

    /// The view of `elements`, or `len` NaNs.
    #[inline(always)]
    fn or_nan(elements: Option<Elements<'a>>, len: usize) -> Self {
        let nan = || {
            Elements::F64(StridedOf {
                first: &NAN,
                stride: 0,
                len,
                values: core::marker::PhantomData,
            })
        };
        Strided {
            elements: elements.unwrap_or_else(nan),
        }
    }

    /// The view by the type its elements are stored as.
    #[inline(always)]
    pub fn elements(&self) -> Elements<'a> {
        self.elements
    }

    /// The number of elements.
    #[inline(always)]
    pub fn len(&self) -> usize {
        match self.elements {
            Elements::F64(view) => view.len,
            Elements::F32(view) => view.len,
        }
    }

    /// Whether the view has no elements.
    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The elements as a slice where they are f64 side by side (stride 1), which a loop can
    /// then read several at a time.
    #[inline(always)]
    pub fn contiguous(&self) -> Option<&'a [f64]> {
        match self.elements {
            // SAFETY: with stride 1, `new` checked that `start .. start + len` lies in the
            // borrowed slice (or `len` is 0 and the pointer is not read), borrowed for `'a`.
            Elements::F64(view) if view.stride == 1 => {
                Some(unsafe { core::slice::from_raw_parts(view.first, view.len) })
            }
            _ => None,
        }
    }

    /// Element `i` of the view, as f64; NaN for `i ≥ len`. A loop over many elements reads
    /// faster from [`elements`](Self::elements), matched once.
    #[inline(always)]
    pub fn get(&self, i: usize) -> f64 {
        match self.elements {
            Elements::F64(view) => view.get(i),
            Elements::F32(view) => view.get(i),
        }
    }

    /// The elements in order, as f64.
    #[inline(always)]
    pub fn iter(self) -> impl Iterator<Item = f64> + 'a {
        (0..self.len()).map(move |i| self.get(i))
    }
}

impl<'a> From<&'a [f64]> for Strided<'a> {
    /// All of `values`, in order.
    #[inline(always)]
    fn from(values: &'a [f64]) -> Self {
        Strided::new(values, 0, 1, values.len())
    }
}

/// A table of f64 or f32 values in two words, as a slice of one type takes: the address of
/// its first value, its lowest bit set where the values are f32, and their count. So [`Data`]
/// and a row's view are no larger than they were for f64 alone, which a CPU gradient over wide
/// rows, its loop inlined whole, turned out to need.
///
/// [`Data`]: crate::Data
#[derive(Clone, Copy, Debug)]
pub struct RawTable<'a> {
    first: *const f64,
    len: usize,
    values: core::marker::PhantomData<&'a [f64]>,
}

// SAFETY: a `RawTable` is a shared borrow of `[f64]` or `[f32]` for `'a`, which both are.
unsafe impl Send for RawTable<'_> {}
// SAFETY: as above: it only reads.
unsafe impl Sync for RawTable<'_> {}

impl<'a> RawTable<'a> {
    /// The values of `values`.
    #[inline(always)]
    pub const fn wide(values: &'a [f64]) -> Self {
        RawTable {
            first: values.as_ptr(),
            len: values.len(),
            values: core::marker::PhantomData,
        }
    }

    /// The values of `values`, each read as the f64 it widens to.
    #[inline(always)]
    pub fn narrow(values: &'a [f32]) -> Self {
        RawTable {
            first: values.as_ptr().cast::<f64>().map_addr(|a| a | 1),
            len: values.len(),
            values: core::marker::PhantomData,
        }
    }

    /// The shape of `len` f64 that lie where this side cannot read them, on a device: every
    /// read gives NaN or nothing, as past the end. Only the host makes one; no kernel gets one.
    #[cfg(not(target_arch = "nvptx64"))]
    #[inline(always)]
    pub const fn absent(len: usize) -> Self {
        RawTable {
            first: core::ptr::null(),
            len,
            values: core::marker::PhantomData,
        }
    }

    /// Whether the values lie elsewhere ([`absent`](Self::absent)). A kernel's table never
    /// does, so the device does not test it.
    #[inline(always)]
    pub fn is_absent(&self) -> bool {
        #[cfg(not(target_arch = "nvptx64"))]
        return self.first.is_null();
        #[cfg(target_arch = "nvptx64")]
        return false;
    }

    /// Whether the values are f32.
    #[inline(always)]
    pub fn is_narrow(&self) -> bool {
        self.first.addr() & 1 != 0
    }

    /// The f64 values, or none where they are f32.
    #[inline(always)]
    pub fn as_wide(&self) -> &'a [f64] {
        if self.is_narrow() || self.len == 0 || self.is_absent() {
            return &[];
        }
        // SAFETY: `len` f64 from `first`, borrowed for `'a`.
        unsafe { core::slice::from_raw_parts(self.first, self.len) }
    }

    /// The f32 values, or none where they are f64.
    #[inline(always)]
    pub fn as_narrow(&self) -> &'a [f32] {
        if !self.is_narrow() || self.len == 0 {
            return &[];
        }
        // SAFETY: `len` f32 from `first` without its tag, borrowed for `'a`.
        unsafe { core::slice::from_raw_parts(self.narrow_first(), self.len) }
    }

    #[inline(always)]
    fn narrow_first(&self) -> *const f32 {
        self.first.map_addr(|a| a & !1).cast::<f32>()
    }

    /// The number of values.
    #[inline(always)]
    pub const fn len(&self) -> usize {
        self.len
    }

    /// Whether there are none.
    #[inline(always)]
    pub const fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Value `i`, as f64; `None` past the end.
    #[inline(always)]
    pub fn get(&self, i: usize) -> Option<f64> {
        if i >= self.len || self.is_absent() {
            None
        } else if !self.is_narrow() {
            // SAFETY: `i` is below the count of f64 from `first`.
            Some(unsafe { *self.first.add(i) })
        } else {
            // SAFETY: `i` is below the count of f32 from the untagged `first`.
            Some(f64::from(unsafe { *self.narrow_first().add(i) }))
        }
    }

    /// Values `start`, `start + stride`, … , `len` of them: all NaN unless all lie here.
    #[inline(always)]
    pub fn strided(&self, start: usize, stride: usize, len: usize) -> Strided<'a> {
        if self.is_narrow() {
            Strided::new_f32(self.as_narrow(), start, stride, len)
        } else {
            Strided::new(self.as_wide(), start, stride, len)
        }
    }
}
