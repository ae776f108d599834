//! Raw kernels' arguments: how a kernel sees its slices, on either target; and the terms'
//! view of their variables as [`Num`]s.

use crate::real::Num;

/// `x` as the [`Num`]s a term computes with, without copying.
#[inline(always)]
pub fn as_nums<R>(x: &[R]) -> &[Num<R>] {
    // SAFETY: `Num<R>` is `#[repr(transparent)]` over `R`: same size, alignment and validity,
    // so the slice reinterprets element for element, for as long as `x` is borrowed.
    unsafe { core::slice::from_raw_parts(x.as_ptr().cast::<Num<R>>(), x.len()) }
}

/// A slice argument as a raw kernel receives it: device address and length, one 16-byte
/// `.param` (the struct is `#[repr(C)]`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SliceArg {
    /// The device address of the first element.
    pub ptr: u64,
    /// The number of `f64` elements.
    pub len: u64,
}

/// A raw kernel's output buffer. Any thread may [`set`](Out::set) any element or
/// [`add`](Out::add) to it atomically, as in CUDA; which write lands last among threads that
/// write the same element is unspecified, as on the GPU. Indices out of range panic (trap on
/// the GPU).
#[derive(Clone, Copy)]
pub struct Out<'a> {
    #[cfg(target_arch = "nvptx64")]
    ptr: *mut f64,
    #[cfg(target_arch = "nvptx64")]
    len: usize,
    #[cfg(target_arch = "nvptx64")]
    buffer: core::marker::PhantomData<&'a mut [f64]>,
    /// On the CPU, threads share the buffer as atomic cells holding f64 bits.
    #[cfg(not(target_arch = "nvptx64"))]
    cells: &'a [core::sync::atomic::AtomicU64],
}

#[cfg(target_arch = "nvptx64")]
impl Out<'_> {
    /// The number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Writes `value` to element `i`.
    pub fn set(&self, i: usize, value: f64) {
        assert!(i < self.len);
        // SAFETY: in bounds; the host launcher passed a live device buffer of `len` f64.
        unsafe { self.ptr.add(i).write(value) }
    }

    /// Adds `value` to element `i`, atomically.
    pub fn add(&self, i: usize, value: f64) {
        assert!(i < self.len);
        // SAFETY: as above; the buffer is in global memory.
        unsafe { super::atomic_add_f64(self.ptr.add(i), value) };
    }
}

#[cfg(not(target_arch = "nvptx64"))]
impl<'a> Out<'a> {
    /// Shares `values` among the CPU executor's threads for the duration of a launch.
    pub fn new(values: &'a mut [f64]) -> Self {
        use core::sync::atomic::AtomicU64;
        const { assert!(align_of::<AtomicU64>() == align_of::<f64>()) };
        // SAFETY: AtomicU64 has the size of f64 and (checked above) its alignment; the
        // exclusive borrow guarantees no other access while the cells live.
        let cells = unsafe {
            core::slice::from_raw_parts(values.as_mut_ptr().cast::<AtomicU64>(), values.len())
        };
        Out { cells }
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        self.cells.len()
    }

    /// Writes `value` to element `i`.
    pub fn set(&self, i: usize, value: f64) {
        self.cells[i].store(value.to_bits(), core::sync::atomic::Ordering::Relaxed);
    }

    /// Adds `value` to element `i`, atomically (a compare-and-swap loop).
    pub fn add(&self, i: usize, value: f64) {
        use core::sync::atomic::Ordering::Relaxed;
        let cell = &self.cells[i];
        let mut current = cell.load(Relaxed);
        while let Err(seen) = cell.compare_exchange_weak(
            current,
            (f64::from_bits(current) + value).to_bits(),
            Relaxed,
            Relaxed,
        ) {
            current = seen;
        }
    }
}

impl Out<'_> {
    /// Whether the buffer has no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The slice a kernel argument describes.
///
/// # Safety
/// `arg` must describe `len` initialized f64 in device memory that nothing writes during the
/// kernel.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub unsafe fn input<'a>(arg: SliceArg) -> &'a [f64] {
    unsafe { super::slice(arg.ptr as *const f64, arg.len as usize) }
}

/// The output buffer a kernel argument describes.
///
/// # Safety
/// `arg` must describe `len` f64 of device memory that lives for the kernel.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub unsafe fn output<'a>(arg: SliceArg) -> Out<'a> {
    Out {
        ptr: arg.ptr as *mut f64,
        len: arg.len as usize,
        buffer: core::marker::PhantomData,
    }
}

#[cfg(test)]
mod tests {
    use crate::device::Strided;

    #[test]
    fn strided_views_read_in_bounds_or_nan() {
        // Three columns of two rows; row 1's columns are at 1, 3, 5.
        let values = [0.0, 1.0, 2.0, 3.0, 4.0, 5.0];
        let row = Strided::new(&values, 1, 2, 3);
        assert_eq!(
            (row.len(), row.get(0), row.get(1), row.get(2)),
            (3, 1.0, 3.0, 5.0)
        );
        assert!(row.get(3).is_nan(), "past the view");
        // One element past the slice makes every element NaN, and keeps the length.
        let short = Strided::new(&values, 1, 2, 4);
        assert_eq!(short.len(), 4);
        assert!((0..5).all(|i| short.get(i).is_nan()));
        // A stride whose last step overflows is out of bounds, not a wrapped read.
        assert!(Strided::new(&values, 1, usize::MAX, 2).get(0).is_nan());
        assert!(Strided::new(&values, usize::MAX, 1, 1).get(0).is_nan());
        // Empty views, anywhere.
        assert!(Strided::new(&values, 100, 7, 0).is_empty());
        assert!(Strided::new(&[], 0, 0, 0).get(0).is_nan());
        // Stride 1: a slice.
        let all = Strided::new(&values, 0, 1, 6);
        assert_eq!((0..6).map(|i| all.get(i)).sum::<f64>(), 15.0);
    }

    #[test]
    fn f32_views_read_the_f64_each_value_widens_to() {
        let values = [0.1f32, 1.5, 2.0e-30, 3.0, f32::MAX, 5.0];
        let row = Strided::new_f32(&values, 0, 2, 3);
        assert_eq!(
            [row.get(0), row.get(1), row.get(2)],
            [
                f64::from(0.1f32),
                f64::from(2.0e-30f32),
                f64::from(f32::MAX)
            ]
        );
        assert!(row.get(3).is_nan(), "past the view");
        assert!(row.contiguous().is_none(), "f32 is never an f64 slice");
        assert!((0..2).all(|i| Strided::new_f32(&values, 5, 1, 2).get(i).is_nan()));
        let all = Strided::new_f32(&values, 0, 1, 6);
        assert!(all.iter().eq(values.map(f64::from)));
    }
}
